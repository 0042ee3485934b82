import type { Msg } from "@nats-io/transport-node";
import type { JetStreamManager } from "@nats-io/jetstream";
import { nodeOfReportSubject } from "../names.ts";
import { parseHostReport, type HostReport } from "../contracts/report.ts";
import { total } from "../bus/total.ts";
import { readLastReport, readLastReports, reportsEnd, type ReportHub } from "../bus/reports.ts";
import type { WaitClock } from "./context.ts";

/** The reports a push waits for (R32) and the broker holders' servers that missed a list (R60). */

/**
 * R60: the holders among `holders` whose last stored report names a server that missed its user
 * list (`servers` with one not ok). A push sends them their declaration again even when it is not
 * behind, so the server that was down takes the list it missed. A holder with no stored report,
 * or one that does not parse, is not resent for this.
 */
export async function missedServersOf(jsm: JetStreamManager, holders: readonly string[]): Promise<Set<string>> {
  // A server that just came back may leave JetStream answering late for a moment: retried.
  const found = await readLastReports(jsm, holders, { retry: true });
  return new Set(holders.filter((node) => {
    const read = found.get(node);
    return read?.kind === "stored" && namesMissedServer(read.stored.report);
  }));
}

/** R60: whether `report` names a server that missed the user list it carried. */
export function namesMissedServer(report: HostReport | undefined): boolean {
  return report?.servers?.some((server) => server.ok !== true) === true;
}

/** Collects node reports (core subscription plus the REPORTS stream) and waits for expected digests. */
export class ReportWatch {
  readonly #expected = new Map<string, string>();
  readonly #received = new Map<string, HostReport>();
  /** When the bus stored each received report (stored ones only; live ones are new by definition). */
  readonly #storedAt = new Map<string, string>();
  /**
   * Nodes sent by this push: a stored report of theirs counts only past `#from` (the REPORTS
   * stream's last sequence before the push sent anything), so a report made before the send, even
   * of the same digest, is never taken for this send's (R32).
   */
  readonly #fresh = new Set<string>();
  #from = 0;
  readonly #unlisten: () => void;
  readonly #jsm: JetStreamManager;
  readonly #clock: WaitClock;
  #wake: (() => void) | null = null;
  /** The connection came back since the last read of the stream: what was reported meanwhile was stored, not heard. */
  #resumed = false;

  constructor(reports: ReportHub, jsm: JetStreamManager, clock: WaitClock) {
    this.#jsm = jsm;
    this.#clock = clock;
    // R65: total; what is not a report (another subject, not JSON, another contract) is ignored
    // here, and said by the controller's own report watch (one bounded line), not once per push.
    const hear = total((m: Msg) => {
      const node = nodeOfReportSubject(m.subject);
      if (node !== null) this.#take(node, parseHostReport(m.json()));
    }, () => undefined);
    this.#unlisten = reports.listen({
      hear: (m) => { void hear(m); },
      resumed: () => {
        this.#resumed = true;
        this.#wake?.();
      },
    });
  }

  /**
   * Takes `report`, heard on `node`'s report subject, when it is the expected digest. The bus lets
   * a node publish on its own report subject alone, so a body naming another node is nobody's
   * report (R32, R43): another node's word that this one applied is never taken.
   */
  #take(node: string, report: HostReport, stored?: { seq: number; time: Date }): void {
    if (report.node !== node || this.#expected.get(node) !== report.digest) return;
    if (stored !== undefined && this.#fresh.has(node) && stored.seq <= this.#from) return;
    this.#received.set(node, report);
    if (stored !== undefined) this.#storedAt.set(node, stored.time.toISOString());
    else this.#storedAt.delete(node);
    this.#wake?.();
  }

  /** Marks where the REPORTS stream ends before anything is sent: stored reports up to it are not fresh. */
  async markFrom(): Promise<void> {
    this.#from = await reportsEnd(this.#jsm);
  }

  /** Expects `digest` from `node`; `sent`: this push sent it, so only a report made after the send counts. */
  expect(node: string, digest: string, sent = true): void {
    this.#expected.set(node, digest);
    if (sent) this.#fresh.add(node);
    else this.#fresh.delete(node);
  }

  /** When the bus stored the received report of `node`, if it came from the stream. */
  storedAt(node: string): string | undefined {
    return this.#storedAt.get(node);
  }

  /**
   * The node's last stored report, when it says it applied `digest` (ok), with when it was stored;
   * else undefined. Does not count as received.
   */
  async appliedBefore(node: string, digest: string): Promise<string | undefined> {
    const read = await readLastReport(this.#jsm, node);
    if (read.kind !== "stored") return undefined;
    const { report: r, at } = read.stored;
    return r.digest === digest && r.ok === true ? at.toISOString() : undefined;
  }

  report(node: string): HostReport | undefined {
    return this.#received.get(node);
  }

  missing(nodes: Iterable<string>): string[] {
    return [...nodes].filter((n) => !this.#received.has(n));
  }

  /**
   * Takes the latest stored report of each of `nodes` from the REPORTS stream now (a report of the
   * expected digest counts as received), so a node that reported long ago is not waited for.
   */
  async readStored(nodes: readonly string[]): Promise<void> {
    if (nodes.length > 0) await this.#fromStream(nodes);
  }

  /** Reads the latest stored report of each missing node from the REPORTS stream (a batch at a time: R55 may read every node). */
  async #fromStream(nodes: readonly string[]): Promise<void> {
    for (const read of (await readLastReports(this.#jsm, nodes)).values()) {
      if (read.kind === "stored") this.#take(read.stored.node, read.stored.report, { seq: read.stored.seq, time: read.stored.at });
    }
  }

  /**
   * Waits until every node in `nodes` reported its expected digest, or the clock reached `deadline`
   * (milliseconds on the watch's clock); returns the missing ones. The stream is read after 1 s,
   * then 2 s after each read, and at once after the connection came back (a report published
   * meanwhile was stored, never heard: the broker's holder reloading the bus drops the controller's
   * connection just before it reports, R14). A read runs beside the wait: a report heard live ends
   * it even while a read hangs (JetStream may not answer at once on a connection just back). At
   * the deadline the stream is read once more (or the read in flight awaited) and nothing more.
   */
  async wait(nodes: readonly string[], deadline: number): Promise<string[]> {
    const clock = this.#clock;
    let nextStreamCheck = clock.now() + 1_000;
    let reading: Promise<void> | undefined;
    for (;;) {
      if (this.missing(nodes).length === 0) return [];
      const now = clock.now();
      if (now >= deadline) {
        await (reading ?? this.#fromStream(this.missing(nodes)));
        return this.missing(nodes);
      }
      if (reading === undefined && (now >= nextStreamCheck || this.#resumed)) {
        this.#resumed = false;
        reading = this.#fromStream(this.missing(nodes)).finally(() => {
          reading = undefined;
          nextStreamCheck = clock.now() + 2_000;
          this.#wake?.();
        });
      }
      const woken = new AbortController();
      this.#wake = () => woken.abort();
      const until = reading === undefined ? Math.min(deadline, nextStreamCheck) : deadline;
      await clock.sleep(Math.max(1, until - clock.now()), woken.signal);
      this.#wake = null;
    }
  }

  close(): void {
    this.#unlisten();
  }
}
