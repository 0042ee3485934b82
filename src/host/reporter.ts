import { randomUUID } from "node:crypto";
import type { NatsConnection } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { REPORTS_STREAM, reportSubject } from "../names.ts";
import { stampReport, type HostReport } from "../contracts/report.ts";
import { dialAgainAfter, isTransientJetStreamError } from "../bus/retry.ts";
import { carryUnsent, firstLine, reportRetryDelay } from "./plan.ts";

/**
 * The host agent's reports on their way to the REPORTS stream (R32). A push waits for the stored
 * report, so one the bus did not take (the connection dropped under it as a reload took the node's
 * old key away, or JetStream could not answer for a moment) is published again, with its
 * Nats-Msg-Id (stored once), until the stream holds it. The stream keeps one report per node, so
 * a newer report replaces one still waiting, carrying what that one said that it does not (its
 * drift, R55: carryUnsent).
 */
export type Reporter = {
  /** Sends `report` (carrying what an unsent one said): one attempt now, then in the background until stored. Returns what was sent. */
  send(nc: NatsConnection, report: HostReport): Promise<HostReport>;
  /** Publishes the waiting report again on `nc` (a new connection), in the background. */
  resume(nc: NatsConnection): void;
  /** The last report sent, if any (R68: said again at each reconnect). */
  last(): HostReport | undefined;
};

/**
 * Settings of a reporter: the node, its log, whether the host stopped, its backoff, `extra`,
 * fields every report gets as it is sent (R72: the modules' run state, as it is then), and
 * `onStored`, called for each report the stream stored (the host's metrics).
 */
export type ReporterOptions = {
  node: string; log: (line: string) => void; stopped: () => boolean; initialMs: number; maxMs: number;
  extra?: () => Partial<HostReport>;
  onStored?: () => void;
};

/** A reporter for one host agent (Reporter). */
export function reporter({ node, log, stopped, initialMs, maxMs, extra, onStored }: ReporterOptions): Reporter {
  /** The latest report the stream has not acknowledged yet, with its message id. */
  let unstored: { report: HostReport; data: string; id: string } | undefined;
  let lastSent: HostReport | undefined;
  let retrying = false;
  /** Report publishes in a row the bus did not answer (R62: every third dials the bus again). */
  let unansweredInARow = 0;
  /** One JetStream publish of `waiting`; true when the stream acknowledged it. */
  const store = async (nc: NatsConnection, waiting: NonNullable<typeof unstored>): Promise<boolean> => {
    try {
      await jetstream(nc).publish(reportSubject(node), waiting.data, { msgID: waiting.id });
      unansweredInARow = 0;
      if (unstored === waiting) unstored = undefined;
      onStored?.();
      return true;
    } catch (error) {
      if (waiting === unstored) log(`host ${node}: its report was not stored in ${REPORTS_STREAM} (${firstLine(error)}): publishing it again until it is`);
      if (isTransientJetStreamError(error) && dialAgainAfter(++unansweredInARow) && !nc.isClosed()) {
        log(`host ${node}: JetStream did not answer ${unansweredInARow} report publishes in a row on this connection: dialling the bus again`);
        void nc.reconnect().catch(() => undefined);
      }
      return false;
    }
  };
  /** Publishes the waiting report again, with backoff, until it is stored, the connection closes or the host stops (one loop at a time). */
  const storeWaiting = async (nc: NatsConnection): Promise<void> => {
    if (retrying) return;
    retrying = true;
    try {
      for (let attempt = 1; unstored !== undefined && !stopped() && !nc.isClosed(); attempt += 1) {
        await new Promise((resolve) => setTimeout(resolve, reportRetryDelay(attempt, initialMs, maxMs)));
        const waiting = unstored;
        if (waiting !== undefined && !stopped() && !nc.isClosed()) await store(nc, waiting);
      }
    } finally {
      retrying = false;
    }
  };
  return {
    async send(nc, report) {
      const carried = { ...carryUnsent(unstored?.report, report), ...(extra?.() ?? {}) };
      const waiting = { report: carried, data: JSON.stringify(stampReport(carried)), id: randomUUID() };
      lastSent = carried;
      unstored = waiting;
      if (!(await store(nc, waiting))) void storeWaiting(nc);
      return carried;
    },
    resume(nc) {
      if (unstored !== undefined) void storeWaiting(nc);
    },
    last: () => lastSent,
  };
}
