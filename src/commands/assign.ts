import { AssignRequest, type BodyOf } from "../contracts/verbs.ts";
import type { MeshEvent } from "../events/index.ts";
import { nodesOfModule, type State } from "../projections/index.ts";
import { metaOf, refuse, type CommandDefinition, type Decision, type Envelope } from "./envelope.ts";
import { refuseUnknownModuleOrNode } from "./shared.ts";

/**
 * Refuses `unknown-module`, `unknown-node`, and `already-assigned` when the module is on that node.
 * Success: ModuleAssigned about `module/<module>`; the node becomes a holder of every seat the
 * module claims (R17).
 */
export function decide(state: State, command: AssignRequest, envelope: Envelope): Decision {
  const unknown = refuseUnknownModuleOrNode(state, command.module, command.node);
  if (unknown) return unknown;
  if (nodesOfModule(state.assignments, command.module).includes(command.node)) {
    return refuse("already-assigned", `module "${command.module}" is already assigned to node "${command.node}"`, "node");
  }
  return {
    ok: true,
    entity: { kind: "module", id: command.module },
    events: [{ ...metaOf(envelope), type: "ModuleAssigned", module: command.module, node: command.node }],
  };
}

/** `{ module, node, nodes }`: the assignment made and every node the module is now on. */
export function reply(state: State, events: readonly MeshEvent[]): BodyOf<"assign"> {
  const assigned = events.find((e) => e.type === "ModuleAssigned");
  if (!assigned || assigned.type !== "ModuleAssigned") throw new Error("assign reply: the commit has no ModuleAssigned");
  return { module: assigned.module, node: assigned.node, nodes: [...nodesOfModule(state.assignments, assigned.module)] };
}

export const assign: CommandDefinition<typeof AssignRequest> = {
  kind: "command",
  verb: "assign",
  summary: "assign a module to a node",
  schema: AssignRequest,
  secretsNeeded: () => 0,
  decide,
  reply,
  bounded: [{ field: "nodes", see: "`mesh modules` (each module's nodes) or `mesh nodes` (each node's modules)" }],
};
