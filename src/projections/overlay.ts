import type { Draft } from "immer";
import type { MeshEvent } from "../events/index.ts";
import { assertNever } from "./assertNever.ts";

/** The overlay: the hub (at most one, R9) and each placed node's overlay name. */
export type OverlayState = { hub: string | null; placed: Record<string, string> };

export const initialOverlay: OverlayState = { hub: null, placed: {} };

/** Fold of overlay placement. A removed node leaves the overlay (and stops being the hub). */
export function evolveOverlay(draft: Draft<OverlayState>, event: MeshEvent): void {
  switch (event.type) {
    case "OverlayPlaced":
      draft.placed[event.node] = event.overlayName;
      if (event.hub) draft.hub = event.node;
      return;
    case "NodeRemoved":
      delete draft.placed[event.node];
      if (draft.hub === event.node) draft.hub = null;
      return;
    case "MeshCreated": case "NodeEnrolled": case "CredentialMinted": case "CredentialRotated":
    case "CredentialRevoked": case "ModuleRegistered": case "ModuleIssued": case "ModuleAssigned":
    case "ModuleUnassigned": case "SeatAliased": case "SeatHandedOver": case "ProvisionMinted": case "ProvisionRotated":
    case "DeclarationSent":
    case "CommitVoided": case "RecordsRestored":
      return;
    default:
      assertNever(event);
  }
}

/** Where every node is on the overlay: node → overlay name, for the placed nodes only (R7). */
export function whereEveryoneIs(state: OverlayState): Readonly<Record<string, string>> {
  return state.placed;
}
