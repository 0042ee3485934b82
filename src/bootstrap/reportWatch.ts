/**
 * The world's evidence from the hosts (R43): each host reports the records' sequence of the
 * declaration it applied (HostReport.recordsSequence) with the controller's tag on it
 * (recordsTag). A report ahead of the records' end, whose tag verifies, means the records were
 * restored or lost their tail; the catalogue is then latched behind. Read from the REPORTS stream
 * at start (every node's latest report, removed nodes' included) and heard live while the
 * controller runs. The broker holder's report also names the users on the installed list and
 * their keys: not evidence (a removal is only installed by the next push), but what an accepted
 * restore names for the operator and takes each node's key from (R44, R64).
 *
 * A report is believed only as far as its sender can know and is entitled to say: the bus lets a
 * node publish on its own report subject alone, so the subject says whose report it is and a body
 * naming another node is ignored; a records sequence counts only with a tag only the controller
 * can make; an installed list counts only from a node that holds mesh-broker in the records.
 */
import type { Msg, NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { BROKER_SEAT, CATALOGUE_STREAM, nodeOfReportSubject, reportSubject } from "../names.ts";
import { readLastReport, reportHub, reportingNodes, type ReportHub } from "../bus/reports.ts";
import type { BehindEvidence, Catalogue } from "../records/catalogue.ts";
import { latchBehind } from "../records/behind.ts";
import { holdersOf, type State } from "../projections/index.ts";
import type { RecordsFact } from "../crypto/secrets.ts";
import type { ControllerLog } from "./log.ts";
import { parseHostReport, type HostReport } from "../contracts/report.ts";
import { boundedText, dropsOf, errorLine, total } from "../bus/total.ts";

/** Whether `tag` is the controller's tag on `fact` (recordsTagVerifies under the mesh key). */
export type VerifyRecordsTag = (fact: RecordsFact, tag: string) => boolean;

/**
 * What one report heard on `subject` is worth (judgeReport):
 * - `not-a-report`: the subject is no node's report subject;
 * - `other-node`: the body names `named`, not `node`, the node of its subject: nobody's report;
 * - `report`: `node`'s report, naming no records sequence past what the controller knows;
 * - `untagged` / `tag-refused`: `node` claims records `sequence`, past what the controller knows,
 *   without a tag, or with one that is not the controller's on that claim: no evidence;
 * - `ahead`: `node` applied a declaration the controller composed from records `sequence`, past
 *   what it knows: ask the records where they end (reportAhead).
 */
export type ReportJudgement =
  | { kind: "not-a-report" }
  | { kind: "other-node"; node: string; named: string }
  | { kind: "report"; node: string }
  | { kind: "untagged" | "tag-refused" | "ahead"; node: string; sequence: number };

/**
 * Judges one parsed report heard on `subject` (pure as long as `verify` is). `known` is the
 * highest records sequence the controller already accounts for (its folded sequence, or an
 * accepted restore's lost end: reports up to it predate the restore, R44); only a claim past it is
 * checked against its tag, so the common report costs no tag check.
 */
export function judgeReport(subject: string, report: HostReport, known: number, verify: VerifyRecordsTag): ReportJudgement {
  const node = nodeOfReportSubject(subject);
  if (node === null) return { kind: "not-a-report" };
  if (report.node !== node) return { kind: "other-node", node, named: report.node };
  const sequence = report.recordsSequence;
  if (sequence === undefined || sequence <= known) return { kind: "report", node };
  if (report.recordsTag === undefined) return { kind: "untagged", node, sequence };
  if (!verify({ node, digest: report.digest, recordsSequence: sequence }, report.recordsTag)) return { kind: "tag-refused", node, sequence };
  return { kind: "ahead", node, sequence };
}

/**
 * The evidence of a verified claim (pure): `node` applied a declaration composed from records
 * `sequence`, past `lastSequence` (the records' end), or null when the records reach it.
 */
export function reportAhead(node: string, sequence: number, lastSequence: number): BehindEvidence | null {
  if (sequence <= lastSequence) return null;
  return {
    kind: "host-report-ahead",
    detail: `node ${node} applied a declaration composed from records sequence ${sequence}, but the records end at ${lastSequence}`,
  };
}

/** The list a node's bus runs, as its report names it: the users, their keys, and the report's records sequence (0 when none). */
export type InstalledList = { sequence: number; users: string[]; keys: Record<string, string> | undefined };

/**
 * The installed list an accepted restore reads (R44, R64), from `lists` (each node's latest
 * report naming one, by the node of its subject): only a node holding mesh-broker in `state` (the
 * records being accepted) runs the bus's list, so only its word counts; among several holders, the
 * report of the highest records sequence (the first holder by name on a tie). Undefined when no
 * holder reported a list. Pure.
 */
export function installedListOf(state: State, lists: ReadonlyMap<string, InstalledList>): InstalledList | undefined {
  let found: InstalledList | undefined;
  for (const holder of holdersOf(state, BROKER_SEAT)) {
    const list = lists.get(holder);
    if (list !== undefined && (found === undefined || list.sequence > found.sequence)) found = list;
  }
  return found;
}

/** A name from a report's body, for a log line: quoted, cut to 64 characters (it is a node's word). */
function quoted(text: string): string {
  return JSON.stringify(text.length > 64 ? `${text.slice(0, 64)}...` : text);
}

/** The one log line a judgement that is ignored gets (once per node and kind), or null. */
function ignoredLine(judgement: ReportJudgement, known: number): string | null {
  switch (judgement.kind) {
    case "other-node":
      return `a report on ${reportSubject(judgement.node)} names node ${quoted(judgement.named)}: ignored, a node reports for itself alone (R43)`;
    case "untagged":
      return `node ${judgement.node} reports records sequence ${judgement.sequence}, past the ${known} this controller accounts for, without the controller's tag on it: no evidence that the records are behind, ignored (R43)`;
    case "tag-refused":
      return `node ${judgement.node} reports records sequence ${judgement.sequence}, past the ${known} this controller accounts for, with a tag that is not the controller's on it: no evidence that the records are behind, ignored (R43)`;
    case "not-a-report":
    case "report":
    case "ahead":
      return null;
  }
}

async function lastOfRecords(jsm: JetStreamManager): Promise<number> {
  return (await jsm.streams.info(CATALOGUE_STREAM)).state.last_seq;
}

function latch(catalogue: Catalogue, evidence: BehindEvidence, recordsSequence: number, log: ControllerLog): void {
  latchBehind(catalogue, evidence, recordsSequence, log);
}

/**
 * Checks every node's latest stored report, then hears new ones until `stop()`. A report whose
 * tag verifies (`verify`) and that is ahead of the records latches `catalogue.behind` (one log line
 * each); a report that is ignored (judgeReport) is said once per node and kind in the log. Errors
 * reading the stream are logged, never thrown: the mark and the live reports still guard.
 * `installedList(state)` is installedListOf over the reports heard. Hears on `reports` (the
 * process's one subscription to the report subjects) when given, else on one of its own; `heard`
 * hears each node's report read or heard (the metrics' nodes by state).
 */
export async function watchReports(
  nc: NatsConnection,
  catalogue: Catalogue,
  log: ControllerLog,
  verify: VerifyRecordsTag,
  reports?: ReportHub,
  heard?: (node: string, report: HostReport) => void,
): Promise<{ stop(): void; installedList(state: State): InstalledList | undefined }> {
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  // Each node's latest report naming the list its bus runs, by the node of its subject.
  const lists = new Map<string, InstalledList>();
  // What was said of each node's ignored reports (`kind node`): once each, a node cannot flood the log.
  const said = new Set<string>();
  const drop = dropsOf(log);
  const check = async (subject: string, r: HostReport) => {
    const known = Math.max(catalogue.state.sequence, catalogue.state.mesh?.restoredUpTo ?? 0);
    const judgement = judgeReport(subject, r, known, verify);
    if (judgement.kind === "not-a-report") return;
    const line = ignoredLine(judgement, known);
    if (line !== null) {
      const key = `${judgement.kind} ${judgement.node}`;
      if (!said.has(key)) {
        said.add(key);
        log.error(line);
      }
    }
    if (judgement.kind === "other-node") return;
    heard?.(judgement.node, r);
    if (r.users !== undefined) lists.set(judgement.node, { sequence: r.recordsSequence ?? 0, users: r.users, keys: r.keys });
    if (judgement.kind !== "ahead") return;
    const evidence = reportAhead(judgement.node, judgement.sequence, await lastOfRecords(jsm));
    if (evidence) latch(catalogue, evidence, judgement.sequence, log);
  };
  // A message that does not follow the report contract (another version, a bad field) is no evidence.
  const contractDrop = (subject: string) => drop("report-contract", `a report on ${boundedText(subject)}: dropped, it does not follow the report contract (R65)`);
  try {
    for (const node of await reportingNodes(jsm)) {
      const subject = reportSubject(node);
      const read = await readLastReport(jsm, node);
      // One stored report that cannot be read is dropped alone: the others are still read (R65).
      const judged = read.kind === "stored" ? read.stored.report : read.kind === "other-node" ? read.report : null;
      if (read.kind === "not-a-report") contractDrop(subject);
      if (judged) await total(() => check(subject, judged), (error) => { drop("report-failed", `the stored report on ${boundedText(subject)}: dropped, ${errorLine(error)} (R65)`); })();
    }
  } catch (error) {
    log.info(`reports not read at start (${error instanceof Error ? error.message.split("\n")[0] : String(error)}): live reports still guard the records (R43)`);
  }
  // R65: a message the watch cannot read, or on a subject that is no report's, is one bounded line.
  const hear = total(async (m: Msg) => {
    if (nodeOfReportSubject(m.subject) === null) {
      drop("report-subject", `a message on ${boundedText(m.subject)} reached the report watch: dropped, not a report subject (R65)`);
      return;
    }
    let raw: unknown;
    try {
      raw = m.json<unknown>();
    } catch {
      drop("report-unreadable", `a report on ${boundedText(m.subject)}: dropped, not JSON (R65)`);
      return;
    }
    let r: HostReport;
    try {
      r = parseHostReport(raw);
    } catch {
      contractDrop(m.subject);
      return;
    }
    await check(m.subject, r);
  }, (error, m) => { drop("report-failed", `a report on ${boundedText(m.subject)}: dropped, ${errorLine(error)} (R65)`); });
  const ownHub = reports === undefined ? reportHub(nc) : null;
  const unlisten = (reports ?? ownHub!).listen({
    hear: (m) => { void hear(m); },
    stopped: (error) => log.error(`the report watch stopped: ${errorLine(error)}`),
  });
  return { stop: () => { unlisten(); ownHub?.close(); }, installedList: (state) => installedListOf(state, lists) };
}
