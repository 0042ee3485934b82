import type { BodyOf, PlacedNode } from "../contracts/verbs.ts";
import { brokerNode, whereEveryoneIs, type State } from "../projections/index.ts";
import { query } from "./envelope.ts";

/**
 * `placed`: every node on the overlay, sorted by name (an array of objects, like every list a
 * reply carries); `hub`: the hub or null; `broker`: brokerNode (R6), or null.
 */
export type WhereAnswer = BodyOf<"where">;

export function answer(state: State): WhereAnswer {
  const broker = brokerNode(state);
  const hub = state.overlay.hub;
  const placed = Object.entries(whereEveryoneIs(state.overlay))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([node, overlayName]) => ({ node, overlayName, hub: node === hub, broker: node === broker }));
  return { placed, hub, broker };
}

export const where = query("where", {
  answer,
  page: { field: "placed", key: (item) => (item as PlacedNode).node },
});
