import { NodeRemoveRequest, type BodyOf } from "../contracts/verbs.ts";
import type { CredentialRotated, MeshEvent, ProvisionRotated } from "../events/index.ts";
import { credentialOf, credentialsDeliveredTo, isEnrolled, provisionsDeliveredTo, type State } from "../projections/index.ts";
import { command, metaOf, refuse, type Decision, type Envelope } from "./envelope.ts";
import { addressResolver, refuseLosingBroker, secretAt, stateAfter } from "./shared.ts";

/**
 * Refuses `unknown-node` for a node not enrolled, and `last-broker-holder` (field `node`) when the
 * node is the last holder of mesh-broker (R49). Otherwise ONE commit about `node/<node>`:
 * NodeRemoved (the fold drops the node's assignments, overlay place and credential), then a
 * CredentialRotated, with fresh secret #i, for every principal whose credential may be on the
 * node's disk (credentialsDeliveredTo: its modules now and the modules that ran there since their
 * credential was minted; the controller's own when `mesh-controller` ran there), sorted by principal
 * key, at the address `addressFor` gives once the node is gone (R7); then a ProvisionRotated for
 * every provision whose secret may be on the node's disk (provisionsDeliveredTo: it ran the
 * consumer, or held the seat that grants it, now or since the secret was minted), sorted by its
 * key, its new secret the sealed seed of the next fresh secret (32 random bytes, as a minted
 * provision's). R48: the credentials the removed machine held end with it; the next push's user
 * list carries the fresh ones and refuses the old keys, and the nodes still running those
 * modules, or granting those provisions, receive the fresh ones in their declarations, sent before
 * the broker's (R31). Deciding the rotations in the removal's own commit leaves no moment where
 * the records say the node is gone while its credentials still stand, and lets the reply name them.
 */
export function decide(state: State, command: NodeRemoveRequest, envelope: Envelope): Decision {
  if (!isEnrolled(state.nodes, command.node)) {
    return refuse("unknown-node", `no node "${command.node}" is enrolled: see \`mesh nodes\``, "node");
  }
  const meta = metaOf(envelope);
  const entity = { kind: "node", id: command.node };
  const removed: MeshEvent = { ...meta, type: "NodeRemoved", node: command.node };
  const losing = refuseLosingBroker(state, entity, [removed], envelope, "node");
  if (losing) return losing;
  const exposed = credentialsDeliveredTo(state, command.node);
  const events: MeshEvent[] = [removed];
  if (exposed.length > 0) {
    const addressOf = addressResolver(stateAfter(state, entity, [removed], envelope));
    exposed.forEach((principal, index) => {
      const secret = secretAt(envelope, index);
      events.push({
        ...meta, type: "CredentialRotated", principal, user: credentialOf(state.credentials, principal)!.user,
        nkey: secret.nkey, sealed: secret.sealed, address: addressOf(principal),
      });
    });
  }
  provisionsDeliveredTo(state, command.node).forEach((p, index) => {
    const secret = secretAt(envelope, exposed.length + index);
    events.push({ ...meta, type: "ProvisionRotated", seat: p.seat, provision: p.provision, consumer: p.consumer, user: p.user, sealed: secret.sealed });
  });
  return { ok: true, entity, events };
}

/** What `node.remove` answers: the node removed, the principals given fresh credentials and the provisions given fresh secrets (R48). */
export type NodeRemoveReply = BodyOf<"node.remove">;

export function reply(_state: State, events: readonly MeshEvent[]): NodeRemoveReply {
  const removed = events.find((e) => e.type === "NodeRemoved");
  if (!removed || removed.type !== "NodeRemoved") throw new Error("node.remove reply: the commit has no NodeRemoved");
  const fresh = events.filter((e): e is CredentialRotated => e.type === "CredentialRotated").map((e) => ({ kind: e.principal.kind, name: e.principal.name }));
  const provisions = events.filter((e): e is ProvisionRotated => e.type === "ProvisionRotated").map((e) => ({ seat: e.seat, provision: e.provision, consumer: e.consumer }));
  return { node: removed.node, freshCredentials: fresh, freshProvisions: provisions };
}

export const nodeRemove = command("node.remove", {
  secretsNeeded: (state, command) => (isEnrolled(state.nodes, command.node)
    ? credentialsDeliveredTo(state, command.node).length + provisionsDeliveredTo(state, command.node).length
    : 0),
  decide,
  reply,
});
