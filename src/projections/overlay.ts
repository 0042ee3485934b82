import type { MeshEvent } from "../events/index.ts";
import { assertNever } from "./assertNever.ts";
import { deleteIn, emptyBuckets, entriesIn, getIn, setIn, type Buckets, type Owned } from "./buckets.ts";

/**
 * The overlay: the hub (at most one, R9) and each placed node's overlay name, a bucketed map by
 * node (buckets.ts): read it with overlayNameOf and whereEveryoneIs.
 */
export type OverlayState = { hub: string | null; placed: Buckets<string> };

export const initialOverlay: OverlayState = { hub: null, placed: emptyBuckets() };

/**
 * Fold of overlay placement: the overlay after `event`, a new object when it changed (`owned`: see
 * buckets.ts setIn). A removed node leaves the overlay (and stops being the hub).
 */
export function evolveOverlay(overlay: OverlayState, event: MeshEvent, owned: Owned): OverlayState {
  switch (event.type) {
    case "OverlayPlaced":
      return { hub: event.hub ? event.node : overlay.hub, placed: setIn(overlay.placed, event.node, event.overlayName, owned) };
    case "NodeRemoved": {
      const placed = deleteIn(overlay.placed, event.node, owned);
      const hub = overlay.hub === event.node ? null : overlay.hub;
      return placed === overlay.placed && hub === overlay.hub ? overlay : { hub, placed };
    }
    case "MeshCreated": case "NodeEnrolled": case "CredentialMinted": case "CredentialRotated":
    case "CredentialRevoked": case "ModuleRegistered": case "ModuleIssued": case "ModuleRetired": case "ModuleAssigned":
    case "ModuleUnassigned": case "SeatAliased": case "SeatHandedOver": case "ProvisionMinted": case "ProvisionRotated":
    case "DeclarationSent":
    case "CommitVoided": case "RecordsRestored":
      return overlay;
    default:
      return assertNever(event);
  }
}

/** The overlay name of `node`, or undefined when it is not on the overlay (R7). */
export function overlayNameOf(state: OverlayState, node: string): string | undefined {
  return getIn(state.placed, node);
}

/** Where every node is on the overlay: node → overlay name, for the placed nodes only (R7). A new object: O(placed nodes). */
export function whereEveryoneIs(state: OverlayState): Readonly<Record<string, string>> {
  return Object.fromEntries(entriesIn(state.placed));
}
