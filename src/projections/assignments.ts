import type { Draft } from "immer";
import { ShardedMap } from "./shardedMap.ts";
import { peek, withInserted, without, type SliceFold } from "./slice.ts";

export type Handover = { seat: string; from: string; to: string; at: string };
/**
 * Where modules run: module → sorted node names, and the same turned around, node → sorted module
 * names (`byNode`: a node's removal and modulesOnNode read it instead of scanning every module;
 * derived, so a snapshot does not carry it, nodeIndex builds it again); and the handover record,
 * seat → its moves. Read them with nodesOfModule, assignedModules, modulesOnNode and handoversOf.
 * A handover's commit also moves the claiming module (unassign + assign), so holders are read from
 * the assignments alone, the same way by every lookup (R17).
 */
export type AssignmentsState = {
  readonly byModule: ReadonlyMap<string, readonly string[]>;
  readonly byNode: ReadonlyMap<string, readonly string[]>;
  readonly handovers: ReadonlyMap<string, readonly Handover[]>;
};

/** Sets `key`'s sorted list to `list`, dropping the key when the list is empty. */
function put(map: Map<string, readonly string[]>, key: string, list: readonly string[]): void {
  if (list.length === 0) map.delete(key);
  else map.set(key, list);
}

/** Takes `node` out of `module`'s nodes and `module` out of `node`'s modules (binary searches). */
function unassign(state: Draft<AssignmentsState>, module: string, node: string): void {
  const left = without(peek(state.byModule, module) ?? [], node);
  if (left === undefined) return;
  put(state.byModule, module, left);
  const modules = without(peek(state.byNode, node) ?? [], module);
  if (modules !== undefined) put(state.byNode, node, modules);
}

/**
 * Fold of assignments, unassignments and handovers (each list replaced by a new one, never changed
 * in place). A removed node loses its assignments.
 */
export const assignmentsFold: SliceFold<AssignmentsState> = {
  ModuleAssigned: (state, event) => {
    // A module on 10,000 nodes must not be scanned and re-sorted for each one assigned.
    const nodes = withInserted(peek(state.byModule, event.module), event.node);
    if (nodes === undefined) return;
    state.byModule.set(event.module, nodes);
    const modules = withInserted(peek(state.byNode, event.node), event.module);
    if (modules !== undefined) state.byNode.set(event.node, modules);
  },
  ModuleUnassigned: (state, event) => {
    unassign(state, event.module, event.node);
  },
  NodeRemoved: (state, event) => {
    // Only the modules on the node are read and changed (byNode), not every module.
    for (const module of peek(state.byNode, event.node) ?? []) unassign(state, module, event.node);
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

/** The modules assigned to a node, sorted (a copy). */
export function modulesOnNode(state: AssignmentsState, node: string): string[] {
  return [...(state.byNode.get(node) ?? [])];
}

/** `byModule` turned around: node → its modules, sorted (AssignmentsState's `byNode`, built again on unpack). */
export function nodeIndex(byModule: ReadonlyMap<string, readonly string[]>): ShardedMap<string[]> {
  const byNode = new ShardedMap<string[]>();
  for (const [module, nodes] of byModule) {
    for (const node of nodes) {
      const modules = byNode.get(node);
      if (modules) modules.push(module);
      else byNode.set(node, [module]);
    }
  }
  byNode.forEach((modules) => modules.sort());
  return byNode;
}

/** The recorded moves of a seat from holder to holder, oldest first (empty when none). */
export function handoversOf(state: AssignmentsState, seat: string): readonly Handover[] {
  return state.handovers.get(seat) ?? [];
}
