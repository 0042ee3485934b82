import { NodeEnrolRequest, type BodyOf } from "../contracts/verbs.ts";
import type { CredentialMinted, MeshEvent, NodeEnrolled } from "../events/index.ts";
import { brokerReachableAt, busAddressesOf, type State } from "../projections/index.ts";
import { busUser } from "../names.ts";
import { metaOf, refuse, type CommandDefinition, type Decision, type Envelope, type ReplyTools } from "./envelope.ts";
import { NO_MESH_MESSAGE, secretAt } from "./shared.ts";

/**
 * Refuses `no-mesh` before genesis, `node-exists` for a name already enrolled, and `key-in-use`
 * (field publicKey) for a public key another enrolled node holds: secrets are sealed to a node's
 * key (R3), so two nodes on one key could each open the other's. Otherwise one
 * commit about `node/<node>`: NodeEnrolled and CredentialMinted for principal `node:<node>`, user
 * `busUser("node", node)`, hash and sealed secret from fresh secret #1, address
 * `brokerReachableAt(state, node)` (R1, R7). Minting needs no server: the credential becomes
 * usable at the next composition.
 */
export function decide(state: State, command: NodeEnrolRequest, envelope: Envelope): Decision {
  if (!state.mesh) return refuse("no-mesh", NO_MESH_MESSAGE);
  if (state.nodes[command.node]) {
    return refuse("node-exists", `node "${command.node}" is already enrolled: remove it first or choose another name`, "node");
  }
  const holder = Object.values(state.nodes).find((node) => node.publicKey === command.publicKey);
  if (holder) {
    return refuse("key-in-use", `node "${holder.name}" is enrolled with this public key: each node enrols with its own (\`mesh host init\` on the new machine makes one)`, "publicKey");
  }
  const secret = secretAt(envelope, 0);
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
        hash: secret.hash,
        sealed: secret.sealed,
        address: brokerReachableAt(state, command.node),
      },
    ],
  };
}

/** What `node.enrol` answers: the node's credential, its password sealed to the node's key (R3, R33). */
export type NodeEnrolReply = BodyOf<"node.enrol">;

/**
 * The node's credential: address, user, fingerprint, and the password sealed to the node's own
 * public key (`tools.sealToNode`), so only that node can open it; never the password in the clear.
 */
export function reply(state: State, events: readonly MeshEvent[], tools: ReplyTools): NodeEnrolReply {
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
      sealedPassword: tools.sealToNode(enrolled.publicKey, tools.openSecret(minted.sealed)),
      fingerprint: state.mesh?.fingerprint ?? "",
    },
  };
}

export const nodeEnrol: CommandDefinition<typeof NodeEnrolRequest> = {
  kind: "command",
  verb: "node.enrol",
  summary: "enrol a node: record it and mint its credential (R1)",
  schema: NodeEnrolRequest,
  secretsNeeded: () => 1,
  decide,
  reply,
};
