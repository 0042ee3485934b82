import type { Draft } from "immer";
import type { MeshEvent } from "../events/index.ts";
import { assertNever } from "./assertNever.ts";

export type Handover = { seat: string; from: string; to: string; at: string };
/**
 * Where modules run: module → sorted node names; and the handover record, seat → its moves.
 * A handover's commit also moves the claiming module (unassign + assign), so holders are read
 * from the assignments alone, the same way by every lookup (R17).
 */
export type AssignmentsState = {
  byModule: Record<string, string[]>;
  handovers: Record<string, Handover[]>;
};

export const initialAssignments: AssignmentsState = { byModule: {}, handovers: {} };

/**
 * Where `node` is or would go in `nodes`, sorted in the order of Array.prototype.sort (UTF-16 code
 * units): a binary search.
 */
function sortedIndex(nodes: readonly string[], node: string): number {
  let low = 0;
  let high = nodes.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (nodes[middle]! < node) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** Takes `node` out of `module`'s sorted list `nodes` (in place), and the module out of `byModule` when none is left. */
function unassign(byModule: Draft<AssignmentsState["byModule"]>, module: string, nodes: string[], node: string): void {
  const at = sortedIndex(nodes, node);
  if (nodes[at] !== node) return;
  if (nodes.length === 1) delete byModule[module];
  else nodes.splice(at, 1);
}

/** Fold of assignments, unassignments and handovers. A removed node loses its assignments. */
export function evolveAssignments(draft: Draft<AssignmentsState>, event: MeshEvent): void {
  switch (event.type) {
    case "ModuleAssigned": {
      // A module on 10,000 nodes must not be scanned and re-sorted for each one assigned.
      const nodes = (draft.byModule[event.module] ??= []);
      const at = sortedIndex(nodes, event.node);
      if (nodes[at] !== event.node) nodes.splice(at, 0, event.node);
      return;
    }
    case "ModuleUnassigned": {
      const nodes = draft.byModule[event.module];
      if (nodes) unassign(draft.byModule, event.module, nodes, event.node);
      return;
    }
    case "NodeRemoved":
      // Each module's list is searched, not scanned: a removal looks at every module.
      for (const module in draft.byModule) unassign(draft.byModule, module, draft.byModule[module]!, event.node);
      return;
    case "SeatHandedOver":
      (draft.handovers[event.seat] ??= []).push({ seat: event.seat, from: event.from, to: event.to, at: event.at });
      return;
    case "MeshCreated": case "NodeEnrolled": case "CredentialMinted": case "CredentialRotated":
    case "CredentialRevoked": case "ModuleRegistered": case "ModuleIssued": case "SeatAliased":
    case "OverlayPlaced": case "ProvisionMinted": case "ProvisionRotated": case "DeclarationSent":
    case "CommitVoided": case "RecordsRestored":
      return;
    default:
      assertNever(event);
  }
}

/** The nodes a module is assigned to, sorted (empty when none). */
export function nodesOfModule(state: AssignmentsState, module: string): readonly string[] {
  return state.byModule[module] ?? [];
}

/** The modules assigned to a node, sorted. O(modules). */
export function modulesOnNode(state: AssignmentsState, node: string): string[] {
  return Object.entries(state.byModule)
    .filter(([, nodes]) => nodes.includes(node))
    .map(([module]) => module)
    .sort();
}
