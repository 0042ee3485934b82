import { z } from "zod";
import { brokerNode, whereEveryoneIs, type State } from "../projections/index.ts";
import type { QueryDefinition } from "./envelope.ts";

/** `where {}`: where every node is on the overlay, the hub, and the node the broker runs on. */
export const WhereRequest = z.object({}).strict();

/** `placed`: node → overlay name for placed nodes only (R7); `broker`: brokerNode (R6), or null. */
export type WhereAnswer = { placed: Record<string, string>; hub: string | null; broker: string | null };

export function answer(state: State): WhereAnswer {
  return { placed: { ...whereEveryoneIs(state.overlay) }, hub: state.overlay.hub, broker: brokerNode(state) };
}

export const where: QueryDefinition<typeof WhereRequest> = {
  kind: "query",
  verb: "where",
  summary: "where every node is on the overlay, the hub and the broker's node",
  schema: WhereRequest,
  answer,
  page: { field: "placed" },
};
