import type { SliceFold } from "./slice.ts";

/** The overlay: the hub (at most one, R9) and each placed node's overlay name by node: read it with overlayNameOf and whereEveryoneIs. */
export type OverlayState = { readonly hub: string | null; readonly placed: ReadonlyMap<string, string> };

/** Fold of overlay placement. A removed node leaves the overlay (and stops being the hub). */
export const overlayFold: SliceFold<OverlayState> = {
  OverlayPlaced: (overlay, event) => {
    if (event.hub) overlay.hub = event.node;
    overlay.placed.set(event.node, event.overlayName);
  },
  NodeRemoved: (overlay, event) => {
    if (overlay.placed.has(event.node)) overlay.placed.delete(event.node);
    if (overlay.hub === event.node) overlay.hub = null;
  },
};

/** The overlay name of `node`, or undefined when it is not on the overlay (R7). */
export function overlayNameOf(state: OverlayState, node: string): string | undefined {
  return state.placed.get(node);
}

/** Where every node is on the overlay: node → overlay name, for the placed nodes only (R7). A new object: O(placed nodes). */
export function whereEveryoneIs(state: OverlayState): Readonly<Record<string, string>> {
  return Object.fromEntries(state.placed);
}
