/**
 * The overview's last pushes (issue 30): each push as the records tell it (`pushes`), with what
 * its nodes made of it as their last reports tell it. The records hold what was sent (R31), not the
 * outcome; a node's outcome of a push is read off its last report (R55) while that push is still
 * the last thing it was sent. Pure.
 */
import type { PushView } from "../contracts/verbs.ts";

/** What the overview knows of a node: what it was last sent and its last report (as `mesh get nodes`). */
export type NodeSeen = {
  name: string;
  lastSent?: { digest: string; at: string } | null;
  lastReport?: { digest: string; outcome: string; at: string; error?: string } | null;
};

/**
 * One node's outcome of a push that sent it `digest`: `applied` or `failed` (its last report is of
 * that declaration), `waiting` (it was last sent that one and has not reported it), `sent-again`
 * (a later push sent it another), `removed` (no longer a node).
 */
export type PushOutcome = "applied" | "failed" | "waiting" | "sent-again" | "removed";

/** A push with its outcomes: per shown node, and counted over every node it sent. */
export type PushShown = PushView & {
  outcomes: Array<{ node: string; outcome: PushOutcome; at: string | null; error: string | null }>;
  counts: Record<PushOutcome, number>;
};

function outcomeOf(push: PushView, digest: string, node: NodeSeen | undefined): PushOutcome {
  if (node === undefined) return "removed";
  const report = node.lastReport ?? null;
  const sent = node.lastSent ?? null;
  if (sent !== null && (sent.digest !== digest || sent.at !== push.at)) return "sent-again";
  if (report !== null && report.digest === digest) return report.outcome === "failed" ? "failed" : "applied";
  return "waiting";
}

/**
 * Each push with its nodes' outcomes: `outcomes` for the nodes the push lists by name, `counts`
 * over all `push.sent`: the nodes whose last sent is still this push (same `at`) by their report,
 * the rest `sent-again` or `removed`. O(nodes + pushes × shown nodes).
 */
export function pushesShown(pushes: readonly PushView[], nodes: readonly NodeSeen[]): PushShown[] {
  const byName = new Map(nodes.map((n) => [n.name, n]));
  const byAt = new Map<string, NodeSeen[]>();
  for (const n of nodes) {
    const at = n.lastSent?.at;
    if (at === undefined) continue;
    const same = byAt.get(at);
    if (same === undefined) byAt.set(at, [n]);
    else same.push(n);
  }
  return pushes.map((push) => {
    const counts: Record<PushOutcome, number> = { applied: 0, failed: 0, waiting: 0, "sent-again": 0, removed: 0 };
    const current = byAt.get(push.at) ?? [];
    for (const n of current) counts[outcomeOf(push, n.lastSent!.digest, n)] += 1;
    // The rest of the nodes it sent: sent again since, or removed (the shown ones say which).
    const rest = Math.max(0, push.sent - current.length);
    const shownGone = push.nodes.filter((s) => !byName.has(s.node)).length;
    counts.removed += Math.min(rest, shownGone);
    counts["sent-again"] += rest - Math.min(rest, shownGone);
    const outcomes = push.nodes.map((s) => {
      const node = byName.get(s.node);
      const outcome = outcomeOf(push, s.digest, node);
      const report = node?.lastReport ?? null;
      const reported = outcome === "applied" || outcome === "failed";
      return { node: s.node, outcome, at: reported ? report!.at : null, error: outcome === "failed" ? (report!.error ?? "") : null };
    });
    return { ...push, outcomes, counts };
  });
}
