import type { JetStreamManager } from "@nats-io/jetstream";
import { REPORTS_PAGE, ReportsRequest, type LastReport, type ReportsReply } from "../contracts/verbs.ts";
import { parseHostReport } from "../contracts/report.ts";
import type { Reply } from "../commands/envelope.ts";
import type { ShellHandler } from "../commands/server.ts";
import { REPORTS_STREAM, REPORT_SUBJECTS, nodeOfReportSubject, reportSubject } from "../names.ts";
import { isEnrolled, type NodesState } from "../projections/index.ts";

/**
 * R55: every node's last report, read from the REPORTS stream (which keeps the last report per
 * node, max_msgs_per_subject 1), for remote nodes as for the local one: `mesh nodes` and `mesh
 * status` show it. Served by the controller (it holds the JetStream grants; operators have none).
 */

/** The verb, sent on `commandSubject(asker, REPORTS_VERB)` (R51). */
export const REPORTS_VERB = "reports";

export { REPORTS_PAGE, ReportsRequest, type LastReport, type ReportsReply };

/**
 * Reads the last stored report of each of `nodes` (in that order; a node with no stored report,
 * or one that does not follow the report contract, is left out), all at once: callers pass a page (REPORTS_PAGE at most).
 */
export async function readLastReports(jsm: JetStreamManager, nodes: readonly string[]): Promise<LastReport[]> {
  const found = await Promise.all(nodes.map(async (node): Promise<LastReport | null> => {
    const stored = await jsm.streams.getMessage(REPORTS_STREAM, { last_by_subj: reportSubject(node) }).catch(() => null);
    if (!stored) return null;
    try {
      const r = parseHostReport(stored.json());
      return {
        node, at: stored.time.toISOString(), digest: r.digest, ok: r.ok,
        ...(r.error === undefined ? {} : { error: r.error }),
        ...(r.drift === undefined ? {} : { drift: r.drift }),
      };
    } catch {
      return null;
    }
  }));
  return found.filter((r): r is LastReport => r !== null);
}

/** Stored reports a push reads at once (a batch), at most: thousands of API requests at once would crowd the controller's connection. */
export const REPORT_READS_AT_ONCE = 256;

/**
 * R78: the last stored report of each of `nodes` as a push's plan reads it (LastReported), a batch
 * at a time: null when none is stored, or the stored one is not this node's report (does not parse,
 * or its body names another node); a node whose read failed is left out and counted in `failed`
 * (its report then has no say: a bus that cannot answer must not make a push re-send everyone).
 */
export async function readLastReported(jsm: JetStreamManager, nodes: readonly string[]): Promise<{ reported: Map<string, { digest: string; ok: boolean } | null>; failed: number }> {
  const reported = new Map<string, { digest: string; ok: boolean } | null>();
  let failed = 0;
  for (let i = 0; i < nodes.length; i += REPORT_READS_AT_ONCE) {
    await Promise.all(nodes.slice(i, i + REPORT_READS_AT_ONCE).map(async (node) => {
      let stored;
      try {
        stored = await jsm.streams.getMessage(REPORTS_STREAM, { last_by_subj: reportSubject(node) });
      } catch {
        failed += 1;
        return;
      }
      let report: { digest: string; ok: boolean } | null = null;
      try {
        const r = stored === null ? null : parseHostReport(stored.json());
        if (r !== null && r.node === node) report = { digest: r.digest, ok: r.ok };
      } catch {
        // not a report: none
      }
      reported.set(node, report);
    }));
  }
  return { reported, failed };
}

/** Every node with a stored report, sorted by name. */
async function reportingNodes(jsm: JetStreamManager): Promise<string[]> {
  const info = await jsm.streams.info(REPORTS_STREAM, { subjects_filter: REPORT_SUBJECTS });
  return Object.keys(info.state.subjects ?? {}).map(nodeOfReportSubject).filter((n): n is string => n !== null).sort();
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
      const reply: ReportsReply = { ok: true, reports: await readLastReports(manager, request.nodes) };
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
    const reply: ReportsReply = { ok: true, reports: await readLastReports(manager, page) };
    if (from.length > page.length) reply.next = page.at(-1)!;
    return reply;
  };
}
