import { NodeEnrolRequest, type BodyOf } from "../contracts/verbs.ts";
import type { CredentialMinted, MeshEvent, NodeEnrolled } from "../events/index.ts";
import { brokerReachableAt, busAddressesOf, everyNode, isEnrolled, type State } from "../projections/index.ts";
import { busUser } from "../names.ts";
import { command, metaOf, refuse, type Decision, type Envelope, type ReplyTools } from "./envelope.ts";
import { NO_MESH_MESSAGE, nkeyInUse, refuseRetiredKey } from "./shared.ts";

/** The way to new keys for a machine whose keys the mesh refuses. */
const NEW_KEYS = "run `mesh host init --force` on the machine for new keys and enrol with those";

/**
 * Refuses `no-mesh` before genesis, `node-exists` for a name already enrolled, and `key-in-use`
 * (field publicKey) for a public key another enrolled node holds: secrets are sealed to a node's
 * key (R3), so two nodes on one key could each open the other's; and `key-in-use` (field nkey) for
 * an nkey public key any recorded credential holds (one key, one principal on the list) or the
 * genesis bootstrap key, whose seed is public (nkeyInUse, R13); then `key-retired` (field publicKey,
 * then nkey) for a key the records retired (a removed node's, a rotated-away or revoked one, R66:
 * refuseRetiredKey names when and why, and `mesh host init --force`). Otherwise
 * one commit about `node/<node>`: NodeEnrolled and CredentialMinted for principal `node:<node>`,
 * user `busUser("node", node)`, the node's own `nkey` and no sealed secret (R64: the seed was
 * generated on the node and stays there), address `brokerReachableAt(state, node)` (R1, R7).
 * Needs no server: the credential becomes usable at the next composition.
 */
export function decide(state: State, command: NodeEnrolRequest, envelope: Envelope): Decision {
  if (!state.mesh) return refuse("no-mesh", NO_MESH_MESSAGE);
  if (isEnrolled(state.nodes, command.node)) {
    return refuse("node-exists", `node "${command.node}" is already enrolled: remove it first or choose another name`, "node");
  }
  const holder = everyNode(state.nodes).find((node) => node.publicKey === command.publicKey);
  if (holder) {
    return refuse("key-in-use", `node "${holder.name}" is enrolled with this public key: each node enrols with its own (\`mesh host init\` on the new machine makes one)`, "publicKey");
  }
  const taken = nkeyInUse(state, command.nkey);
  if (taken !== undefined) {
    return refuse("key-in-use", `${taken}: each node enrols with its own (\`mesh host init\` on the new machine makes one)`, "nkey");
  }
  const retired = refuseRetiredKey(state, command.publicKey, "publicKey", NEW_KEYS) ?? refuseRetiredKey(state, command.nkey, "nkey", NEW_KEYS);
  if (retired) return retired;
  const meta = metaOf(envelope);
  return {
    ok: true,
    entity: { kind: "node", id: command.node },
    events: [
      { ...meta, type: "NodeEnrolled", node: command.node, publicKey: command.publicKey },
      {
        ...meta,
        type: "CredentialMinted",
        principal: { kind: "node", name: command.node },
        user: busUser("node", command.node),
        nkey: command.nkey,
        address: brokerReachableAt(state, command.node),
      },
    ],
  };
}

/** What `node.enrol` answers: the node's credential, its address, user, nkey and fingerprint, no secret (R64). */
export type NodeEnrolReply = BodyOf<"node.enrol">;

/** The node's credential as recorded: address, user, its nkey, the mesh's fingerprint; no secret. */
export function reply(state: State, events: readonly MeshEvent[], _tools: ReplyTools): NodeEnrolReply {
  const enrolled = events.find((e): e is NodeEnrolled => e.type === "NodeEnrolled");
  const minted = events.find((e): e is CredentialMinted => e.type === "CredentialMinted");
  if (!enrolled || !minted) throw new Error("node.enrol reply: the commit has no NodeEnrolled and CredentialMinted");
  const addresses = busAddressesOf(state, minted.address);
  return {
    node: enrolled.node,
    credential: {
      address: minted.address,
      ...(addresses ? { addresses } : {}),
      user: minted.user,
      nkey: minted.nkey ?? "",
      fingerprint: state.mesh?.fingerprint ?? "",
    },
  };
}

export const nodeEnrol = command("node.enrol", {
  secretsNeeded: () => 0,
  decide,
  reply,
});
