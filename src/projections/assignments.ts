import type { Draft } from "immer";
import { forEachPlain, peek, withInserted, without, type SliceFold } from "./slice.ts";

export type Handover = { seat: string; from: string; to: string; at: string };
/**
 * Where modules run: module → sorted node names; and the handover record, seat → its moves. Read
 * them with nodesOfModule, assignedModules, modulesOnNode and handoversOf. A handover's commit also
 * moves the claiming module (unassign + assign), so holders are read from the assignments alone,
 * the same way by every lookup (R17).
 */
export type AssignmentsState = {
  readonly byModule: ReadonlyMap<string, readonly string[]>;
  readonly handovers: ReadonlyMap<string, readonly Handover[]>;
};

/** Takes `node` out of `module`'s sorted list `nodes` (a binary search), dropping the module when none is left. */
function unassign(state: Draft<AssignmentsState>, module: string, nodes: readonly string[] | undefined, node: string): void {
  const left = nodes === undefined ? undefined : without(nodes, node);
  if (left === undefined) return;
  if (left.length === 0) state.byModule.delete(module);
  else state.byModule.set(module, left);
}

/**
 * Fold of assignments, unassignments and handovers (each list replaced by a new one, never changed
 * in place). A removed node loses its assignments.
 */
export const assignmentsFold: SliceFold<AssignmentsState> = {
  ModuleAssigned: (state, event) => {
    // A module on 10,000 nodes must not be scanned and re-sorted for each one assigned.
    const nodes = withInserted(peek(state.byModule, event.module), event.node);
    if (nodes !== undefined) state.byModule.set(event.module, nodes);
  },
  ModuleUnassigned: (state, event) => {
    unassign(state, event.module, peek(state.byModule, event.module), event.node);
  },
  NodeRemoved: (state, event) => {
    // Each module's list is searched, not scanned, and only the modules on the node are changed.
    forEachPlain(state.byModule, (module, nodes) => unassign(state, module, nodes, event.node));
  },
  SeatHandedOver: (state, event) => {
    const move = { seat: event.seat, from: event.from, to: event.to, at: event.at };
    state.handovers.set(event.seat, [...(peek(state.handovers, event.seat) ?? []), move]);
  },
};

/** The nodes a module is assigned to, sorted (empty when none). */
export function nodesOfModule(state: AssignmentsState, module: string): readonly string[] {
  return state.byModule.get(module) ?? [];
}

/** Every module assigned to at least one node, with its nodes (sorted), in no particular order. */
export function assignedModules(state: AssignmentsState): [string, readonly string[]][] {
  return [...state.byModule.entries()];
}

/** The modules assigned to a node, sorted. O(assignments). */
export function modulesOnNode(state: AssignmentsState, node: string): string[] {
  return assignedModules(state)
    .filter(([, nodes]) => nodes.includes(node))
    .map(([module]) => module)
    .sort();
}

/** The recorded moves of a seat from holder to holder, oldest first (empty when none). */
export function handoversOf(state: AssignmentsState, seat: string): readonly Handover[] {
  return state.handovers.get(seat) ?? [];
}
