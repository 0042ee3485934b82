import type { MeshEvent } from "../events/index.ts";
import { assertNever } from "./assertNever.ts";
import { deleteIn, emptyBuckets, entriesIn, getIn, setIn, type Buckets, type Owned } from "./buckets.ts";
import { ownList, sortedIndex, withInserted } from "./sorted.ts";

export type Handover = { seat: string; from: string; to: string; at: string };
/**
 * Where modules run: module → sorted node names; and the handover record, seat → its moves. Both
 * grow with the mesh, so both are bucketed maps (buckets.ts): read them with nodesOfModule,
 * assignedModules, modulesOnNode and handoversOf. A handover's commit also moves the claiming
 * module (unassign + assign), so holders are read from the assignments alone, the same way by
 * every lookup (R17).
 */
export type AssignmentsState = {
  byModule: Buckets<string[]>;
  handovers: Buckets<Handover[]>;
};

export const initialAssignments: AssignmentsState = { byModule: emptyBuckets(), handovers: emptyBuckets() };

/** The assignments with `module`'s node list set to `nodes` (removed when empty). */
function withNodes(state: AssignmentsState, module: string, nodes: string[], owned: Owned): AssignmentsState {
  const byModule = nodes.length === 0 ? deleteIn(state.byModule, module, owned) : setIn(state.byModule, module, nodes, owned);
  return byModule === state.byModule ? state : { ...state, byModule };
}

/** The assignments with `node` taken out of `module`'s sorted list `nodes` (found by binary search), or as they were. */
function unassign(state: AssignmentsState, module: string, nodes: readonly string[], node: string, owned: Owned): AssignmentsState {
  const at = sortedIndex(nodes, node);
  if (nodes[at] !== node) return state;
  const next = ownList(nodes, owned);
  next.splice(at, 1);
  return withNodes(state, module, next, owned);
}

/**
 * Fold of assignments, unassignments and handovers: the assignments after `event`, a new object
 * when they changed (`owned`: see buckets.ts setIn; a list the fold made is changed in place, any
 * other copied). A removed node loses its assignments.
 */
export function evolveAssignments(state: AssignmentsState, event: MeshEvent, owned: Owned): AssignmentsState {
  switch (event.type) {
    case "ModuleAssigned": {
      // A module on 10,000 nodes must not be scanned and re-sorted for each one assigned.
      const next = withInserted(getIn(state.byModule, event.module), event.node, owned);
      return next === undefined ? state : withNodes(state, event.module, next, owned);
    }
    case "ModuleUnassigned": {
      const nodes = getIn(state.byModule, event.module);
      return nodes ? unassign(state, event.module, nodes, event.node, owned) : state;
    }
    case "NodeRemoved": {
      // Each module's list is searched, not scanned, and only the modules on the node are changed.
      let after = state;
      for (const [module, nodes] of entriesIn(state.byModule)) after = unassign(after, module, nodes, event.node, owned);
      return after;
    }
    case "SeatHandedOver": {
      const moves = ownList(getIn(state.handovers, event.seat) ?? [], owned);
      moves.push({ seat: event.seat, from: event.from, to: event.to, at: event.at });
      return { ...state, handovers: setIn(state.handovers, event.seat, moves, owned) };
    }
    case "MeshCreated": case "NodeEnrolled": case "CredentialMinted": case "CredentialRotated":
    case "CredentialRevoked": case "ModuleRegistered": case "ModuleIssued": case "ModuleRetired": case "SeatAliased":
    case "OverlayPlaced": case "ProvisionMinted": case "ProvisionRotated": case "DeclarationSent":
    case "CommitVoided": case "RecordsRestored":
      return state;
    default:
      return assertNever(event);
  }
}

/** The nodes a module is assigned to, sorted (empty when none). */
export function nodesOfModule(state: AssignmentsState, module: string): readonly string[] {
  return getIn(state.byModule, module) ?? [];
}

/** Every module assigned to at least one node, with its nodes (sorted), in no particular order. */
export function assignedModules(state: AssignmentsState): [string, readonly string[]][] {
  return entriesIn(state.byModule);
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
  return getIn(state.handovers, seat) ?? [];
}
