import type { JetStreamManager } from "@nats-io/jetstream";
import { REPORTS_PAGE, ReportsRequest, type LastReport, type ReportsReply } from "../contracts/verbs.ts";
import type { Reply } from "../commands/envelope.ts";
import type { ShellHandler } from "../serve/server.ts";
import { readLastReports, reportingNodes } from "../bus/reports.ts";
import { isEnrolled, type NodesState, type State } from "../projections/index.ts";
import { overlapNodes, type OverlapReports } from "../compose/overlap.ts";

/**
 * R55: every node's last report, read from the REPORTS stream (which keeps the last report per
 * node, max_msgs_per_subject 1), for remote nodes as for the local one: `mesh nodes` and `mesh
 * status` show it. Served by the controller (it holds the JetStream grants; operators have none).
 */

/** The verb, sent on `commandSubject(asker, REPORTS_VERB)` (R51). */
export const REPORTS_VERB = "reports";

export { REPORTS_PAGE, ReportsRequest, type LastReport, type ReportsReply };

/**
 * The verb's line for each of `nodes` with a stored report (in that order; a node with none, or
 * whose stored message is not its report, is left out), read through the REPORTS adapter.
 */
async function lastReportRows(jsm: JetStreamManager, nodes: readonly string[]): Promise<LastReport[]> {
  const found = await readLastReports(jsm, nodes);
  return nodes.flatMap((node) => {
    const read = found.get(node);
    if (read?.kind !== "stored") return [];
    const { report: r, at } = read.stored;
    return [{
      node, at: at.toISOString(), digest: r.digest, ok: r.ok,
      ...(r.error === undefined ? {} : { error: r.error }),
      ...(r.drift === undefined ? {} : { drift: r.drift }),
      ...(r.modules === undefined ? {} : { modules: r.modules }),
    }];
  });
}

/**
 * What a push reads of a node's last report: the digest it speaks of and whether it applied it
 * (R78), and for R73 (compose/overlap.ts) the records sequence of that declaration and the
 * modules' run states as the report carries them (unchecked here: overlapEnded reads them).
 */
export type ReportRead = { digest: string; ok: boolean; recordsSequence?: number; modules?: unknown };

/** A stored report as a push reads it (ReportRead). */
function reportRead(report: { digest: string; ok: boolean; recordsSequence?: number }): ReportRead {
  const read: ReportRead = { digest: report.digest, ok: report.ok };
  if (report.recordsSequence !== undefined) read.recordsSequence = report.recordsSequence;
  const modules = (report as { modules?: unknown }).modules;
  if (modules !== undefined) read.modules = modules;
  return read;
}

/**
 * R78: the last stored report of each of `nodes` as a push's plan reads it (LastReported), a batch
 * at a time: null when none is stored, or the stored one is not this node's report (does not parse,
 * or its body names another node); a node whose read failed is left out and counted in `failed`
 * (its report then has no say: a bus that cannot answer must not make a push re-send everyone).
 */
export async function readLastReported(jsm: JetStreamManager, nodes: readonly string[]): Promise<{ reported: Map<string, ReportRead | null>; failed: number }> {
  const reported = new Map<string, ReportRead | null>();
  let failed = 0;
  for (const [node, read] of await readLastReports(jsm, nodes)) {
    if (read.kind === "failed") failed += 1;
    else reported.set(node, read.kind === "stored" ? reportRead(read.stored.report) : null);
  }
  return { reported, failed };
}

/**
 * R73: the last report of every node that decides a rotated module's overlap (compose/overlap.ts
 * overlapNodes), for composition: a node whose read failed is left out (its overlaps hold).
 */
export async function readOverlapReports(jsm: JetStreamManager, state: State): Promise<OverlapReports> {
  const nodes = overlapNodes(state);
  return nodes.length === 0 ? new Map() : (await readLastReported(jsm, nodes)).reported;
}

/**
 * The `reports` verb as the command server serves it (its shell verbs: the request parsed by its
 * contract, ReportsRequest, which refuses what it does not take); a bus error becomes the server's `internal` reply.
 * Listing (no `nodes` named), only the nodes `enrolled` (the caught-up state's nodes) holds are
 * listed and paged: the stream keeps a removed node's last report for good, and an operator reads
 * `mesh reports` beside `mesh nodes` as the fleet's, where a removed node's stale "applied" line
 * would read as a live machine (its removal and past are in `mesh history node <name>`).
 * `after` is the last node of the previous page (its `next`): one not enrolled (a typo, or a node
 * removed since that page) is refused `unknown-node` (field `after`) naming it, never answered
 * with a page as if it were a place in the list.
 */
export function reportsVerb(manager: JetStreamManager, enrolled: () => Promise<NodesState>): ShellHandler<"reports"> {
  return async (request): Promise<Reply> => {
    if (request.nodes !== undefined) {
      const reply: ReportsReply = { ok: true, reports: await lastReportRows(manager, request.nodes) };
      return reply;
    }
    const nodes = await enrolled();
    if (request.after !== undefined && !isEnrolled(nodes, request.after)) {
      return {
        ok: false,
        error: {
          code: "unknown-node", field: "after",
          message: `no node "${request.after}" is enrolled: --after takes the node a page ended with (its \`more: mesh reports --after <node>\` line); \`mesh reports\` without it starts at the first node`,
        },
      };
    }
    const all = (await reportingNodes(manager)).filter((node) => isEnrolled(nodes, node));
    const from = request.after === undefined ? all : all.filter((n) => n > request.after!);
    const page = from.slice(0, request.limit);
    const reply: ReportsReply = { ok: true, reports: await lastReportRows(manager, page) };
    if (from.length > page.length) reply.next = page.at(-1)!;
    return reply;
  };
}
