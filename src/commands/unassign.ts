import { z } from "zod";
import type { MeshEvent } from "../events/index.ts";
import { MeshName } from "../manifest/manifest.ts";
import { nodesOfModule, type State } from "../projections/index.ts";
import { metaOf, refuse, type CommandDefinition, type Decision, type Envelope } from "./envelope.ts";

/** `unassign {module, node}`: take a module off a node. */
export const UnassignRequest = z
  .object({ module: MeshName.describe("the assigned module"), node: MeshName.describe("the node it runs on") })
  .strict();
export type UnassignRequest = z.infer<typeof UnassignRequest>;

/**
 * Refuses `not-assigned` when the module is not on that node (which covers an unknown module or
 * node). Success: ModuleUnassigned about `module/<module>`.
 */
export function decide(state: State, command: UnassignRequest, envelope: Envelope): Decision {
  if (!nodesOfModule(state.assignments, command.module).includes(command.node)) {
    return refuse("not-assigned", `module "${command.module}" is not assigned to node "${command.node}": see \`mesh modules\``, "node");
  }
  return {
    ok: true,
    entity: { kind: "module", id: command.module },
    events: [{ ...metaOf(envelope), type: "ModuleUnassigned", module: command.module, node: command.node }],
  };
}

/** `{ module, node, nodes }`: the assignment removed and the nodes the module is still on. */
export function reply(state: State, events: readonly MeshEvent[]): { module: string; node: string; nodes: string[] } {
  const removed = events.find((e) => e.type === "ModuleUnassigned");
  if (!removed || removed.type !== "ModuleUnassigned") throw new Error("unassign reply: the commit has no ModuleUnassigned");
  return { module: removed.module, node: removed.node, nodes: [...nodesOfModule(state.assignments, removed.module)] };
}

export const unassign: CommandDefinition<typeof UnassignRequest> = {
  kind: "command",
  verb: "unassign",
  summary: "take a module off a node",
  schema: UnassignRequest,
  secretsNeeded: () => 0,
  decide,
  reply,
};
