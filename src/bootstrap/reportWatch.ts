/**
 * The world's evidence from the hosts (R43): each host reports the records' sequence of the
 * declaration it applied (HostReport.recordsSequence). A report ahead of the records' end means
 * the records were restored or lost their tail; the catalogue is then latched behind. Read from
 * the REPORTS stream at start (every node's latest report, removed nodes' included) and heard
 * live while the controller runs. The broker holder's report also names the users on the
 * installed list: not evidence (a removal is only installed by the next push), but what an
 * accepted restore names for the operator when the records do not know them (R44).
 */
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { CATALOGUE_STREAM, REPORT_SUBJECTS, REPORTS_STREAM } from "../names.ts";
import type { BehindEvidence, Catalogue } from "../records/catalogue.ts";
import type { ControllerLog } from "./log.ts";
import { parseHostReport, type HostReport } from "../contracts/report.ts";

/**
 * The evidence one report gives (pure): a report naming a records sequence past `lastSequence`
 * (the records' end), or null. Anything that is not such a report gives null.
 */
export function reportAhead(report: unknown, lastSequence: number): BehindEvidence | null {
  const r = report as { node?: unknown; recordsSequence?: unknown } | null;
  if (r === null || typeof r !== "object" || typeof r.node !== "string" || typeof r.recordsSequence !== "number") return null;
  if (r.recordsSequence <= lastSequence) return null;
  return {
    kind: "host-report-ahead",
    detail: `node ${r.node} applied a declaration composed from records sequence ${r.recordsSequence}, but the records end at ${lastSequence}`,
  };
}

async function lastOfRecords(jsm: JetStreamManager): Promise<number> {
  return (await jsm.streams.info(CATALOGUE_STREAM)).state.last_seq;
}

function latch(catalogue: Catalogue, evidence: BehindEvidence, recordsSequence: number, log: ControllerLog): void {
  if (catalogue.behind?.some((e) => e.detail === evidence.detail)) return;
  catalogue.reportBehind(evidence);
  catalogue.sawUpTo(recordsSequence);
  log.error(`records behind (R43): ${evidence.detail}; run \`mesh replay\``);
}

/**
 * Checks every node's latest stored report, then hears new ones until `stop()`. A report ahead of
 * the records latches `catalogue.behind` (one log line each). Errors reading the stream are
 * logged, never thrown: the mark and the live reports still guard.
 */
export async function watchReports(
  nc: NatsConnection,
  catalogue: Catalogue,
  log: ControllerLog,
): Promise<{ stop(): void; installedUsers(): string[] | undefined; installedKeys(): Record<string, string> | undefined }> {
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  // The users on the broker's installed list, from the report with the highest records sequence:
  // what the world admits, named for the operator when a restore is accepted (R44).
  // Its `keys` (name → nkey) give each node's key as the bus last ran it (R44, R64).
  let installed: { sequence: number; users: string[]; keys: Record<string, string> | undefined } | undefined;
  const check = async (raw: unknown) => {
    // A message that does not follow the report contract (another version, a bad field) is no evidence.
    let r: HostReport;
    try { r = parseHostReport(raw); } catch { return; }
    if (r.users !== undefined) {
      const at = r.recordsSequence ?? 0;
      if (installed === undefined || at >= installed.sequence) installed = { sequence: at, users: r.users, keys: r.keys };
    }
    const sequence = r.recordsSequence;
    // The common case asks nothing of the bus; reports up to an accepted restore's lost end predate it (R44).
    if (sequence === undefined || sequence <= Math.max(catalogue.state.sequence, catalogue.state.mesh?.restoredUpTo ?? 0)) return;
    const evidence = reportAhead(r, await lastOfRecords(jsm));
    if (evidence) latch(catalogue, evidence, sequence, log);
  };
  try {
    const info = await jsm.streams.info(REPORTS_STREAM, { subjects_filter: REPORT_SUBJECTS });
    for (const subject of Object.keys(info.state.subjects ?? {})) {
      const stored = await jsm.streams.getMessage(REPORTS_STREAM, { last_by_subj: subject }).catch(() => null);
      if (stored) await check(stored.json<unknown>());
    }
  } catch (error) {
    log.info(`reports not read at start (${error instanceof Error ? error.message.split("\n")[0] : String(error)}): live reports still guard the records (R43)`);
  }
  const subscription: Subscription = nc.subscribe(REPORT_SUBJECTS, {
    callback: (error, m) => {
      if (error) return;
      let raw: unknown;
      try { raw = m.json<unknown>(); } catch { return; }
      check(raw).catch(() => undefined);
    },
  });
  return { stop: () => subscription.unsubscribe(), installedUsers: () => installed?.users, installedKeys: () => installed?.keys };
}
