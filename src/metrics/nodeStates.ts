/**
 * Nodes by state for the controller's metrics (R78), pure: each enrolled node's state from what
 * the records say it was last sent and what it last reported.
 */
import { lastSent, nodeNames, type State } from "../projections/index.ts";

/** A node's state: never sent a declaration, sent but no report heard, applied the last one sent, failed it, or behind (R78). */
export const NODE_STATES = ["never-sent", "unreported", "applied", "failed", "behind"] as const;
export type NodeState = (typeof NODE_STATES)[number];

/** A node's last report as heard: the digest it names and whether it applied it. */
export type HeardReport = { digest: string; ok: boolean };

/** The state of `node` (see NODE_STATES); a report of another digest than the last sent is behind (R78). */
export function nodeStateOf(state: State, node: string, heard: HeardReport | undefined): NodeState {
  const sent = lastSent(state.sent, node);
  if (sent === undefined) return "never-sent";
  if (heard === undefined) return "unreported";
  if (heard.digest !== sent.digest) return "behind";
  return heard.ok ? "applied" : "failed";
}

/** How many enrolled nodes are in each state, every state present (0 when none). O(nodes). */
export function nodeStateCounts(state: State, heard: ReadonlyMap<string, HeardReport>): Record<NodeState, number> {
  const counts = Object.fromEntries(NODE_STATES.map((s) => [s, 0])) as Record<NodeState, number>;
  for (const node of nodeNames(state.nodes)) counts[nodeStateOf(state, node, heard.get(node))] += 1;
  return counts;
}
