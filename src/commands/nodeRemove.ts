import { z } from "zod";
import type { MeshEvent } from "../events/index.ts";
import { MeshName } from "../manifest/manifest.ts";
import type { State } from "../projections/index.ts";
import { metaOf, refuse, type CommandDefinition, type Decision, type Envelope } from "./envelope.ts";

/** `node.remove {node}`: a machine leaves the mesh. */
export const NodeRemoveRequest = z.object({ node: MeshName.describe("the enrolled node to remove") }).strict();
export type NodeRemoveRequest = z.infer<typeof NodeRemoveRequest>;

/**
 * Refuses `unknown-node` for a node not enrolled. Otherwise NodeRemoved about `node/<node>`; the
 * fold drops the node's assignments, overlay place and credential with it.
 */
export function decide(state: State, command: NodeRemoveRequest, envelope: Envelope): Decision {
  if (!state.nodes[command.node]) {
    return refuse("unknown-node", `no node "${command.node}" is enrolled: see \`mesh nodes\``, "node");
  }
  return {
    ok: true,
    entity: { kind: "node", id: command.node },
    events: [{ ...metaOf(envelope), type: "NodeRemoved", node: command.node }],
  };
}

/** `{ node }`: the node removed. */
export function reply(_state: State, events: readonly MeshEvent[]): { node: string } {
  const removed = events.find((e) => e.type === "NodeRemoved");
  if (!removed || removed.type !== "NodeRemoved") throw new Error("node.remove reply: the commit has no NodeRemoved");
  return { node: removed.node };
}

export const nodeRemove: CommandDefinition<typeof NodeRemoveRequest> = {
  kind: "command",
  verb: "node.remove",
  summary: "remove a node: its assignments, overlay place and credential go with it",
  schema: NodeRemoveRequest,
  secretsNeeded: () => 0,
  decide,
  reply,
};
