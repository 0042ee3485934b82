import { UnassignRequest, type BodyOf } from "../contracts/verbs.ts";
import type { MeshEvent } from "../events/index.ts";
import { nodesOfModule, type State } from "../projections/index.ts";
import { command, metaOf, unchanged, type Decision, type Envelope } from "./envelope.ts";
import { refuseLosingBroker, refuseUnknownModuleOrNode } from "./shared.ts";

/**
 * Refuses `unknown-module` and `unknown-node` as assign does (refuseUnknownModuleOrNode: a typo
 * is named as one, not as a module "not assigned"), and `last-broker-holder` (field `module`) when that would leave mesh-broker with no
 * holder (R49). A module not on that node is accepted `unchanged` (no events): the effect holds.
 * Success: ModuleUnassigned about `module/<module>`.
 */
export function decide(state: State, command: UnassignRequest, envelope: Envelope): Decision {
  const unknown = refuseUnknownModuleOrNode(state, command.module, command.node);
  if (unknown) return unknown;
  const entity = { kind: "module", id: command.module };
  if (!nodesOfModule(state.assignments, command.module).includes(command.node)) return unchanged(entity);
  const events: MeshEvent[] = [{ ...metaOf(envelope), type: "ModuleUnassigned", module: command.module, node: command.node }];
  return refuseLosingBroker(state, entity, events, envelope, "module") ?? { ok: true, entity, events };
}

/** `{ module, node, nodes }`: the assignment removed (or already absent: unchanged) and the nodes the module is still on. */
export function reply(state: State, _events: readonly MeshEvent[], _tools: unknown, _entity: unknown, command: UnassignRequest): BodyOf<"unassign"> {
  return { module: command.module, node: command.node, nodes: [...nodesOfModule(state.assignments, command.module)] };
}

export const unassign = command("unassign", {
  secretsNeeded: () => 0,
  decide,
  reply,
  bounded: [{ field: "nodes", see: "`mesh modules` (each module's nodes) or `mesh nodes` (each node's modules)" }],
});
