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

/** Fold of assignments, unassignments and handovers. A removed node loses its assignments. */
export function evolveAssignments(draft: Draft<AssignmentsState>, event: MeshEvent): void {
  switch (event.type) {
    case "ModuleAssigned": {
      // Binary search in the sorted list (the order of Array.prototype.sort: UTF-16 code units):
      // a module on 10,000 nodes must not be scanned and re-sorted for each one assigned.
      const nodes = (draft.byModule[event.module] ??= []);
      let low = 0;
      let high = nodes.length;
      while (low < high) {
        const middle = (low + high) >>> 1;
        if (nodes[middle]! < event.node) low = middle + 1;
        else high = middle;
      }
      if (nodes[low] !== event.node) nodes.splice(low, 0, event.node);
      return;
    }
    case "ModuleUnassigned": {
      const nodes = draft.byModule[event.module];
      if (!nodes) return;
      const left = nodes.filter((n) => n !== event.node);
      if (left.length === 0) delete draft.byModule[event.module];
      else draft.byModule[event.module] = left;
      return;
    }
    case "NodeRemoved":
      // Only the modules on the node are copied: a removal must not rebuild every module's list.
      for (const module in draft.byModule) {
        const nodes = draft.byModule[module]!;
        if (!nodes.includes(event.node)) continue;
        const left = nodes.filter((n) => n !== event.node);
        if (left.length === 0) delete draft.byModule[module];
        else draft.byModule[module] = left;
      }
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
