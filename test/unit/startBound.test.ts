/**
 * R61: a controller holding the lease serves within a bound or gives the lease up; on the way it
 * dials the bus again once. The watch's timers are a test's own: nothing here waits.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { errors } from "@nats-io/transport-node";
import { START_BOUND_MS, START_REDIAL_MS, StartStalled, startsAgainAfter, watchStart } from "../../src/bootstrap/startBound.ts";
import { ConfigError } from "../../src/config.ts";

/** Timers run by hand: `advance(ms)` runs each timer due by then, in order of its time. */
function manualTimers() {
  let now = 0;
  const timers: Array<{ at: number; run: () => void; cancelled: boolean }> = [];
  return {
    setTimer: (run: () => void, ms: number) => {
      const timer = { at: now + ms, run, cancelled: false };
      timers.push(timer);
      return { cancel: () => { timer.cancelled = true; } };
    },
    advance: (ms: number) => {
      now += ms;
      for (const timer of timers.filter((t) => !t.cancelled && t.at <= now).sort((a, b) => a.at - b.at)) {
        timer.cancelled = true;
        timer.run();
      }
    },
  };
}

describe("watchStart (R61)", () => {
  it("R61: a start that does not serve dials the bus again once at START_REDIAL_MS, then gives the lease up at START_BOUND_MS with StartStalled naming the bound", () => {
    const clock = manualTimers();
    const calls: string[] = [];
    let stalled: StartStalled | undefined;
    watchStart({ redial: (why) => calls.push(`redial: ${why}`), giveUp: (error) => { stalled = error; calls.push("give up"); }, setTimer: clock.setTimer });
    clock.advance(START_REDIAL_MS - 1);
    assert.deepEqual(calls, []);
    clock.advance(1);
    assert.deepEqual(calls, [`redial: the start has not served for ${START_REDIAL_MS} ms`]);
    clock.advance(START_BOUND_MS - START_REDIAL_MS - 1);
    assert.equal(calls.length, 1);
    clock.advance(1);
    assert.deepEqual(calls.slice(1), ["give up"]);
    assert.ok(stalled instanceof StartStalled);
    assert.equal(stalled.boundMs, START_BOUND_MS);
    assert.match(stalled.message, /lease is released \(R61\)/);
    clock.advance(10 * START_BOUND_MS);
    assert.equal(calls.length, 2, "each happens once");
  });

  it("R61: a start that serves before a time passes cancels what that time would do", () => {
    for (const servedAt of [0, START_REDIAL_MS - 1, START_REDIAL_MS, START_BOUND_MS - 1]) {
      const clock = manualTimers();
      const calls: string[] = [];
      const watch = watchStart({ redial: () => calls.push("redial"), giveUp: () => calls.push("give up"), setTimer: clock.setTimer });
      clock.advance(servedAt);
      watch.served();
      clock.advance(10 * START_BOUND_MS);
      assert.deepEqual(calls, servedAt >= START_REDIAL_MS ? ["redial"] : [], `served at ${servedAt} ms`);
    }
  });

  it("the redial comes before the bound, and a bound is long enough for a slow healthy start", () => {
    assert.ok(START_REDIAL_MS < START_BOUND_MS);
    assert.ok(START_BOUND_MS >= 60_000);
  });
});

describe("startsAgainAfter (R61)", () => {
  it("R61 R62: a start failed by a passing bus condition stands by again, as one that stalled holding the lease; any other failure ends it", () => {
    assert.equal(startsAgainAfter(new StartStalled(START_BOUND_MS)), true);
    // Seen in CI: a cluster restarted with its controller answered the start's reads with a timeout after the lease was taken.
    assert.equal(startsAgainAfter(new errors.TimeoutError()), true);
    assert.equal(startsAgainAfter(new Error("reading the records failed", { cause: new errors.TimeoutError() })), true);
    assert.equal(startsAgainAfter(new ConfigError(["MESH_BROKER_ADDRESS"], "MESH_BROKER_ADDRESS is unset")), false);
    assert.equal(startsAgainAfter(new Error("CATALOGUE max_msgs is 3: it would erase commits (R47)")), false);
  });
});
