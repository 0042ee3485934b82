import { AssignRequest, type BodyOf } from "../contracts/verbs.ts";
import type { MeshEvent } from "../events/index.ts";
import { nodesOfModule, type State } from "../projections/index.ts";
import { command, metaOf, unchanged, type Decision, type Envelope } from "./envelope.ts";
import { refuseUnknownModuleOrNode } from "./shared.ts";

/**
 * Refuses `unknown-module` and `unknown-node`. A module already on that node is accepted
 * `unchanged` (no events), as module.register's identical manifest is: the effect holds.
 * Success: ModuleAssigned about `module/<module>`; the node becomes a holder of every seat the
 * module claims (R17).
 */
export function decide(state: State, command: AssignRequest, envelope: Envelope): Decision {
  const unknown = refuseUnknownModuleOrNode(state, command.module, command.node);
  if (unknown) return unknown;
  const entity = { kind: "module", id: command.module };
  if (nodesOfModule(state.assignments, command.module).includes(command.node)) return unchanged(entity);
  return {
    ok: true,
    entity,
    events: [{ ...metaOf(envelope), type: "ModuleAssigned", module: command.module, node: command.node }],
  };
}

/** `{ module, node, nodes }`: the assignment made (or already there: unchanged) and every node the module is now on. */
export function reply(state: State, _events: readonly MeshEvent[], _tools: unknown, _entity: unknown, command: AssignRequest): BodyOf<"assign"> {
  return { module: command.module, node: command.node, nodes: [...nodesOfModule(state.assignments, command.module)] };
}

export const assign = command("assign", {
  secretsNeeded: () => 0,
  decide,
  reply,
  bounded: [{ field: "nodes", see: "`mesh modules` (each module's nodes) or `mesh nodes` (each node's modules)" }],
});
