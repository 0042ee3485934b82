import { REPORTS_PAGE, type LastReport } from "../contracts/verbs.ts";
import type { MeshClient } from "../client/client.ts";
import { shortDigest } from "./render.ts";
import { moduleRunsText, type ModuleRun } from "../contracts/report.ts";
/**
 * R55: a node's last report as `mesh nodes` gives it: data for `--json`, one line for the table.
 * Pure.
 */

/** A stored report as the `reports` verb answers it (src/contracts/verbs.ts). */
type StoredReport = LastReport;

/**
 * A node's last report in `mesh nodes` (`lastReport`): the digest it reported, `outcome`
 * (`applied`: the declaration last sent; `applied-older`: another one than the last sent;
 * `failed`: it could not apply it, `error` says why), `at` (ISO 8601, when the bus stored the
 * report), `drift` (files a re-check wrote back), `sent` (the digest last sent, null when none).
 */
export type NodeLastReport = {
  digest: string;
  outcome: "applied" | "applied-older" | "failed";
  at: string;
  drift: string[];
  sent: string | null;
  error?: string;
  /** R72: each module's run state as the node reported it. */
  modules?: ModuleRun[];
};

/** The `lastReport` of a node last sent `sent` (null: never) whose stored report is `report` (undefined: none): null when none. */
export function lastReportOf(sent: string | null | undefined, report: StoredReport | undefined): NodeLastReport | null {
  if (report === undefined) return null;
  const outcome = report.ok !== true ? "failed" : sent != null && sent !== report.digest ? "applied-older" : "applied";
  return {
    digest: report.digest, outcome, at: report.at, drift: [...(report.drift ?? [])], sent: sent ?? null,
    ...(report.ok !== true ? { error: report.error ?? "" } : {}),
    ...(report.modules === undefined ? {} : { modules: [...report.modules] }),
  };
}

/** The table's one line for `lastReport` (and whether anything was sent, for a node with no report). */
export function lastReportText(last: NodeLastReport | null, sent: string | null | undefined): string {
  if (last === null) return sent ? "none: no report of what it was sent" : "-";
  const drift = last.drift.length > 0 ? `, ${last.drift.length} drifted file(s) written back` : "";
  const state = last.outcome === "failed" ? `FAILED (${last.error ?? ""})` : last.outcome === "applied-older" ? `applied an older one (sent ${shortDigest(String(last.sent))})` : "applied";
  const runs = last.modules === undefined || last.modules.length === 0 ? "" : `; runs: ${moduleRunsText(last.modules)}`;
  return `${shortDigest(last.digest)} ${state} at ${last.at}${drift}${runs}`;
}

/**
 * R55: the last report of each of `nodes` on the bus, asked of the controller's `reports` verb a
 * page of nodes at a time (R59); a node with none is absent. Null when the controller refused.
 */
export async function reportsOf(client: MeshClient, nodes: readonly string[]): Promise<Map<string, LastReport> | null> {
  const found = new Map<string, LastReport>();
  for (let i = 0; i < nodes.length; i += REPORTS_PAGE) {
    const answer = await client.reports({ nodes: nodes.slice(i, i + REPORTS_PAGE) });
    if (!answer.ok) return null;
    for (const r of answer.reports) found.set(r.node, r);
  }
  return found;
}
