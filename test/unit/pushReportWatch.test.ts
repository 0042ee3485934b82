/**
 * The push's wait for reports (src/push/watch.ts) and the report subjects' hub (src/bus/reports.ts)
 * across a reconnect, without a server: a report published while the controller's connection was
 * down is stored in REPORTS and never heard live (the broker's holder reloading the bus drops the
 * controller just before it reports, R14), so the wait reads the stream as soon as the connection
 * is back instead of at its next timed read (R32).
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { Msg, NatsConnection } from "@nats-io/transport-node";
import type { JetStreamManager } from "@nats-io/jetstream";
import { reportHub, type ReportHub, type ReportListener } from "../../src/bus/reports.ts";
import { ReportWatch } from "../../src/push/watch.ts";
import { reportSubject } from "../../src/names.ts";
import type { WaitClock } from "../../src/push/context.ts";

/** A hub whose one listener the test drives. */
function fakeHub(): { hub: ReportHub; listener: () => ReportListener } {
  let listener: ReportListener | undefined;
  return {
    hub: { listen: (l) => { listener = l; return () => { listener = undefined; }; }, close: () => undefined },
    listener: () => listener!,
  };
}

/** REPORTS holding `stored` (node → report) at sequence 7; counts the reads. */
function fakeStream(stored: Record<string, unknown>) {
  let reads = 0;
  const streams = {
    getMessage: async (_stream: string, query: { last_by_subj: string }) => {
      reads += 1;
      await new Promise((r) => setImmediate(r));
      const node = Object.keys(stored).find((n) => reportSubject(n) === query.last_by_subj);
      return node === undefined ? null : { seq: 7, time: new Date("2026-01-01T00:00:00Z"), json: () => stored[node] };
    },
  };
  return { jsm: { streams } as unknown as JetStreamManager, reads: () => reads };
}

/** A clock that never moves: a sleep ends only when the watch is woken (its signal aborted). */
const STILL: WaitClock = {
  now: () => 0,
  sleep: (_ms, signal) => new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true })),
};

async function ticks(n: number): Promise<void> {
  for (let i = 0; i < n; i += 1) await new Promise((r) => setImmediate(r));
}

describe("the push's wait for reports across a reconnect (R32, R14)", () => {
  it("R32: a report stored while the connection was down is taken from the stream once it is back, not at the next timed read", async () => {
    const { hub, listener } = fakeHub();
    const { jsm, reads } = fakeStream({ alpha: { v: 1, node: "alpha", digest: "d1", ok: true } });
    const watch = new ReportWatch(hub, jsm, STILL);
    watch.expect("alpha", "d1");
    let missing: string[] | undefined;
    const waiting = watch.wait(["alpha"], 60_000).then((m) => { missing = m; });
    await ticks(20);
    assert.equal(missing, undefined, "nothing heard and no time passed: still waiting");
    assert.equal(reads(), 0, "the stream is not read before its time");
    listener().resumed!();
    await ticks(20);
    assert.deepEqual(missing, [], "the stored report was read at the reconnect");
    assert.equal(watch.report("alpha")?.digest, "d1");
    await waiting;
    watch.close();
  });

  it("R32: a read of the stream that hangs (JetStream silent on a connection just back) does not hold up a report heard live", async () => {
    const { hub, listener } = fakeHub();
    let release: (() => void) | undefined;
    const streams = { getMessage: () => new Promise((resolve) => { release = () => resolve(null); }) };
    const watch = new ReportWatch(hub, { streams } as unknown as JetStreamManager, STILL);
    watch.expect("alpha", "d1");
    let missing: string[] | undefined;
    const waiting = watch.wait(["alpha"], 60_000).then((m) => { missing = m; });
    listener().resumed!();
    await ticks(10);
    assert.ok(release !== undefined, "the stream is being read");
    const live = { subject: reportSubject("alpha"), json: () => ({ v: 1, node: "alpha", digest: "d1", ok: true }) };
    listener().hear(live as unknown as Msg);
    await ticks(20);
    assert.deepEqual(missing, [], "the live report ended the wait while the read still hangs");
    release!();
    await waiting;
    watch.close();
  });

  it("R32: the hub tells every listener of each reconnect of its connection, and nothing else of its status", async () => {
    const events: Array<{ type: string }> = [];
    let push: (() => void) | undefined;
    let stopped = false;
    const statuses = {
      stop: () => { stopped = true; push?.(); },
      async *[Symbol.asyncIterator]() {
        for (;;) {
          while (events.length > 0) yield events.shift()!;
          if (stopped) return;
          await new Promise<void>((resolve) => { push = resolve; });
        }
      },
    };
    let unsubscribed = false;
    const nc = {
      subscribe: () => ({ unsubscribe: () => { unsubscribed = true; } }),
      status: () => statuses,
    } as unknown as NatsConnection;
    const hub = reportHub(nc);
    const resumed: string[] = [];
    hub.listen({ hear: () => undefined, resumed: () => { resumed.push("a"); } });
    hub.listen({ hear: () => undefined, resumed: () => { throw new Error("its own fault"); } });
    hub.listen({ hear: () => undefined, resumed: () => { resumed.push("c"); } });
    for (const type of ["disconnect", "reconnect", "ping", "reconnect"]) events.push({ type });
    push?.();
    await ticks(10);
    assert.deepEqual(resumed, ["a", "c", "a", "c"]);
    hub.close();
    assert.ok(unsubscribed && stopped, "close ends the subscription and the status watch");
  });
});
