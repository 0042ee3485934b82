import type { Draft } from "immer";
import type { MeshEvent } from "../events/index.ts";
import { assertNever } from "./assertNever.ts";
import { deleteIn, emptyBuckets, entriesIn, getIn, setIn, type Buckets } from "./buckets.ts";

/**
 * The overlay: the hub (at most one, R9) and each placed node's overlay name, a bucketed map by
 * node (buckets.ts): read it with overlayNameOf and whereEveryoneIs.
 */
export type OverlayState = { hub: string | null; placed: Buckets<string> };

export const initialOverlay: OverlayState = { hub: null, placed: emptyBuckets() };

/** Fold of overlay placement. A removed node leaves the overlay (and stops being the hub). */
export function evolveOverlay(draft: Draft<OverlayState>, event: MeshEvent): void {
  switch (event.type) {
    case "OverlayPlaced":
      setIn(draft.placed, event.node, event.overlayName);
      if (event.hub) draft.hub = event.node;
      return;
    case "NodeRemoved":
      deleteIn(draft.placed, event.node);
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

/** The overlay name of `node`, or undefined when it is not on the overlay (R7). */
export function overlayNameOf(state: OverlayState, node: string): string | undefined {
  return getIn(state.placed, node);
}

/** Where every node is on the overlay: node → overlay name, for the placed nodes only (R7). A new object: O(placed nodes). */
export function whereEveryoneIs(state: OverlayState): Readonly<Record<string, string>> {
  return Object.fromEntries(entriesIn(state.placed));
}
