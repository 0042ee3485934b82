import type { Msg, NatsConnection, Subscription } from "@nats-io/transport-node";
import type { JetStreamManager } from "@nats-io/jetstream";
import { REPORTS_STREAM, REPORT_SUBJECTS, nodeOfReportSubject, reportSubject } from "../names.ts";
import { parseHostReport, type HostReport } from "../contracts/report.ts";
import { retryJetStream } from "./retry.ts";

/**
 * The one adapter of the REPORTS stream and the report subjects (R32, R43, R55, R65): every read
 * of a node's last stored report, and every live report a process hears, go through here, so
 * each is judged alike. The stream keeps the last report per node (max_msgs_per_subject 1).
 */

/** Stored reports read at once (a batch), at most: thousands of API requests at once would crowd the caller's connection. */
export const REPORT_READS_AT_ONCE = 256;

/** A node's report as REPORTS stored it: the report, its stream sequence and when the bus stored it. */
export type StoredReport = { node: string; report: HostReport; seq: number; at: Date };

/**
 * What reading a node's last stored report found:
 * - `stored`: its report (it follows the report contract and names the node of its subject);
 * - `none`: nothing is stored for the node;
 * - `not-a-report`: the stored message does not follow the report contract (R65);
 * - `other-node`: the stored report names `report.node`, not the node of its subject: nobody's
 *   report, since the bus lets a node publish on its own subject alone (R43);
 * - `failed`: the bus did not answer the read (`error`): the node's report has no say.
 */
export type LastReportRead =
  | { kind: "stored"; stored: StoredReport }
  | { kind: "none" }
  | { kind: "not-a-report"; error: unknown }
  | { kind: "other-node"; report: HostReport; seq: number; at: Date }
  | { kind: "failed"; error: unknown };

/** Caller settings of a read: `retry` retries a JetStream API that answers late (retryJetStream, a server just back). */
export type ReportReadOptions = { retry?: boolean; atOnce?: number };

/** The last stored report of `node` (LastReportRead). Never throws: a failed read is `failed`. */
export async function readLastReport(jsm: JetStreamManager, node: string, options: ReportReadOptions = {}): Promise<LastReportRead> {
  const get = () => jsm.streams.getMessage(REPORTS_STREAM, { last_by_subj: reportSubject(node) });
  let stored;
  try {
    stored = options.retry === true ? await retryJetStream(`reading ${node}'s last report`, get) : await get();
  } catch (error) {
    return { kind: "failed", error };
  }
  if (!stored) return { kind: "none" };
  let report: HostReport;
  try {
    report = parseHostReport(stored.json());
  } catch (error) {
    return { kind: "not-a-report", error };
  }
  if (report.node !== node) return { kind: "other-node", report, seq: stored.seq, at: stored.time };
  return { kind: "stored", stored: { node, report, seq: stored.seq, at: stored.time } };
}

/** readLastReport of each of `nodes`, REPORT_READS_AT_ONCE (or `options.atOnce`) at a time, by node. Never throws. */
export async function readLastReports(jsm: JetStreamManager, nodes: readonly string[], options: ReportReadOptions = {}): Promise<Map<string, LastReportRead>> {
  const found = new Map<string, LastReportRead>();
  const atOnce = Math.max(1, options.atOnce ?? REPORT_READS_AT_ONCE);
  for (let i = 0; i < nodes.length; i += atOnce) {
    await Promise.all(nodes.slice(i, i + atOnce).map(async (node) => { found.set(node, await readLastReport(jsm, node, options)); }));
  }
  return found;
}

/** Every node with a stored report, sorted by name. Throws when the bus does not answer. */
export async function reportingNodes(jsm: JetStreamManager): Promise<string[]> {
  const info = await jsm.streams.info(REPORTS_STREAM, { subjects_filter: REPORT_SUBJECTS });
  return Object.keys(info.state.subjects ?? {}).map(nodeOfReportSubject).filter((n): n is string => n !== null).sort();
}

/** The REPORTS stream's last sequence now (0 when it cannot be read): stored reports up to it were made before now. */
export async function reportsEnd(jsm: JetStreamManager): Promise<number> {
  return jsm.streams.info(REPORTS_STREAM).then((info) => info.state.last_seq, () => 0);
}

/**
 * Who hears live reports: each message on a report subject, the subscription's error if it stops,
 * and `resumed` after each reconnect of the connection: a report published while it was down was
 * stored (REPORTS) but never heard, so a listener waiting for one reads the stream then.
 */
export type ReportListener = { hear(m: Msg): void; stopped?(error: Error): void; resumed?(): void };

/** One subscription to the report subjects shared by everyone in a process (reportHub). */
export type ReportHub = {
  /** Adds `listener`; returns the function that takes it off. */
  listen(listener: ReportListener): () => void;
  /** Ends the subscription. */
  close(): void;
};

/**
 * The process's one subscription to REPORT_SUBJECTS: each message is handed to every listener, in
 * the order they were added, and each reconnect of `nc` too (`resumed`: the subscription is on the
 * server again when nats.js says it reconnected). A listener that throws does not keep the message
 * or the reconnect from the others.
 */
export function reportHub(nc: NatsConnection): ReportHub {
  const listeners = new Set<ReportListener>();
  const statuses = nc.status();
  void (async () => {
    for await (const status of statuses) {
      if (status.type !== "reconnect") continue;
      for (const listener of [...listeners]) {
        try {
          listener.resumed?.();
        } catch {
          // a listener's own fault is its own
        }
      }
    }
  })();
  const subscription: Subscription = nc.subscribe(REPORT_SUBJECTS, {
    callback: (error, m) => {
      for (const listener of [...listeners]) {
        try {
          if (error) listener.stopped?.(error);
          else listener.hear(m);
        } catch {
          // a listener's own fault is its own (listeners are total: bus/total.ts)
        }
      }
    },
  });
  return {
    listen: (listener) => {
      listeners.add(listener);
      return () => { listeners.delete(listener); };
    },
    close: () => {
      subscription.unsubscribe();
      // nats.js's status iterator (typed as a bare AsyncIterable) ends its loop with stop().
      (statuses as { stop?: () => void }).stop?.();
    },
  };
}
