/**
 * Issue 13: a push's JetStream admin calls (the raise step, purges) survive a moment of "no
 * responders" or "jetstream is not enabled" (a bus under load or reloading): retried with a short
 * bounded backoff, then a typed JetStreamUnavailable; a configuration refusal is never retried.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { JetStreamApiError } from "@nats-io/jetstream";
import { NoRespondersError, RequestError, TimeoutError } from "@nats-io/nats-core";
import type { JetStreamManager } from "@nats-io/jetstream";
import { raiseMesh } from "../../../src/controller/raise.ts";
import { GENESIS, stateOf } from "../../support/givenWhenThen.ts";
import { BUS_READY_DELAYS_MS, DIAL_AGAIN_AFTER, JETSTREAM_RETRY_DELAYS_MS, JetStreamUnavailable, PollTimeout, dialAgainAfter, isTransientJetStreamError, pollUntil, retryJetStream } from "../../../src/bus/retry.ts";

const noResponders = () => new RequestError("no responders: '$JS.API.CONSUMER.NAMES.CONTROL'", { cause: new NoRespondersError("$JS.API.CONSUMER.NAMES.CONTROL") });
const notEnabled = () => Object.assign(new Error("jetstream is not enabled", { cause: noResponders() }), { name: "JetStreamNotEnabled" });
const apiError = (code: number, err_code: number, description: string) => new JetStreamApiError({ code, err_code, description });

describe("retryJetStream", () => {
  it("classifies no responders, timeouts, jetstream not enabled and 503s as transient; configuration refusals and other errors not", () => {
    for (const transient of [
      noResponders(), new NoRespondersError("$JS.API.STREAM.LIST"), new TimeoutError(), notEnabled(),
      apiError(503, 10076, "JetStream not enabled"), apiError(400, 10039, "jetstream not enabled for account"),
      new Error("wrapped", { cause: new TimeoutError() }),
    ]) assert.equal(isTransientJetStreamError(transient), true, `${transient.name}: ${transient.message}`);
    for (const lasting of [
      apiError(400, 10058, "stream name already in use with a different configuration"), apiError(404, 10059, "stream not found"),
      new Error("something else"), new RequestError("permissions violation"), "a string",
    ]) assert.equal(isTransientJetStreamError(lasting), false, String(lasting));
  });

  it("retries a transient failure after a short pause and returns the result; nothing retried without need", async () => {
    const pauses: number[] = [];
    let calls = 0;
    const value = await retryJetStream("raise", async () => {
      calls += 1;
      if (calls === 1) throw noResponders();
      if (calls === 2) throw notEnabled();
      return "raised";
    }, { sleep: async (ms) => { pauses.push(ms); } });
    assert.equal(value, "raised");
    assert.equal(calls, 3);
    assert.deepEqual(pauses, JETSTREAM_RETRY_DELAYS_MS.slice(0, 2));
    let once = 0;
    assert.equal(await retryJetStream("raise", async () => { once += 1; return 1; }), 1);
    assert.equal(once, 1);
  });

  it("gives up after the bound with a typed JetStreamUnavailable naming the operation, the attempts and the last error", async () => {
    let calls = 0;
    const last = new TimeoutError();
    await assert.rejects(
      retryJetStream("raising the mesh's streams and consumers", async () => {
        calls += 1;
        throw calls === 4 ? last : noResponders();
      }, { delaysMs: [1, 1, 1], sleep: async () => {} }),
      (error: unknown) => {
        assert.ok(error instanceof JetStreamUnavailable);
        assert.equal(error.name, "JetStreamUnavailable");
        assert.equal(error.attempts, 4);
        assert.equal(error.operation, "raising the mesh's streams and consumers");
        assert.equal(error.cause, last);
        return true;
      },
    );
    assert.equal(calls, 4, "one attempt plus one per pause, no more");
    const total = JETSTREAM_RETRY_DELAYS_MS.reduce((a, b) => a + b, 0);
    assert.ok(total <= 5_000, "the default bound is short: a few seconds in all");
  });

  it("passes a lasting error through at once, unretried", async () => {
    let calls = 0;
    const refused = apiError(400, 10058, "stream name already in use");
    await assert.rejects(retryJetStream("raise", async () => { calls += 1; throw refused; }, { sleep: async () => assert.fail("no pause") }), (e) => e === refused);
    assert.equal(calls, 1);
  });
});

describe("the push's raise step", () => {
  it("raises through a moment of no responders and jetstream not enabled (as under load: $JS.API.CONSUMER.NAMES), and gives up typed when it lasts", async () => {
    const failing = (times: number) => {
      let calls = 0;
      const added: string[] = [];
      const jsm = {
        streams: {
          list: () => {
            calls += 1;
            if (calls <= times) throw calls % 2 === 1 ? noResponders() : notEnabled();
            return (async function* () {})();
          },
          add: async (config: { name: string }) => { added.push(config.name); return { created: "2026-12-01T00:00:00Z", config }; },
        },
        consumers: { add: async () => ({}) },
      } as unknown as JetStreamManager;
      return { jsm, added, calls: () => calls };
    };
    const quick = { delaysMs: [1, 1, 1], sleep: async () => {} };
    const brief = failing(2);
    const raised = await raiseMesh(brief.jsm, stateOf([GENESIS]), { controllerSubmits: [] }, undefined, quick);
    assert.equal(brief.calls(), 3);
    assert.ok(raised.created.length > 0 && raised.created.every((s) => brief.added.includes(s)), "raised once the API answered");
    const lasting = failing(100);
    await assert.rejects(raiseMesh(lasting.jsm, stateOf([GENESIS]), { controllerSubmits: [] }, undefined, quick), JetStreamUnavailable);
    assert.equal(lasting.calls(), 4);
    assert.deepEqual(lasting.added, [], "nothing raised");
  });
});

/** A fake clock whose sleep moves it: pollUntil's pauses recorded, no time passes. */
function fakeClock() {
  let t = 1_000;
  const pauses: number[] = [];
  return { pauses, now: () => t, sleep: async (ms: number) => { pauses.push(ms); t += ms; } };
}

describe("issue 12: pollUntil, the one poll loop", () => {
  it("returns the first value an attempt gives; undefined and throws are 'not yet', asked again every everyMs", async () => {
    const clock = fakeClock();
    const answers: Array<() => Promise<string | undefined>> = [
      async () => undefined,
      async () => { throw new Error("not up yet"); },
      async () => "ready",
      async () => "never asked",
    ];
    let asked = 0;
    const value = await pollUntil(() => answers[asked++]!(), { everyMs: 200, timeoutMs: 10_000, what: "it is ready", ...clock });
    assert.equal(value, "ready");
    assert.equal(asked, 3);
    assert.deepEqual(clock.pauses, [200, 200]);
  });

  it("past timeoutMs throws PollTimeout naming what and the attempts, the last error as cause; the last pause is cut at the deadline", async () => {
    const clock = fakeClock();
    const last = new Error("connection refused");
    let asked = 0;
    const failed = await pollUntil(async () => { asked += 1; throw last; }, { everyMs: 400, timeoutMs: 1_000, what: "the controller answers", ...clock }).catch((e: unknown) => e);
    assert.ok(failed instanceof PollTimeout, String(failed));
    assert.equal(failed.what, "the controller answers");
    assert.equal(failed.attempts, asked);
    assert.equal(failed.cause, last);
    assert.deepEqual(clock.pauses, [400, 400, 200]);
    assert.match(failed.message, /the controller answers/);
  });

  it("a poll with no timeout asks until it is so; at least one attempt even with timeoutMs 0", async () => {
    const clock = fakeClock();
    let asked = 0;
    assert.equal(await pollUntil(async () => (++asked < 50 ? undefined : asked), { everyMs: 500, what: "the lease is free", ...clock }), 50);
    let once = 0;
    await assert.rejects(pollUntil(async () => { once += 1; return undefined; }, { everyMs: 10, timeoutMs: 0, what: "never", ...clock }), PollTimeout);
    assert.equal(once, 1);
  });
});

describe("dialAgainAfter", () => {
  it("R62: every DIAL_AGAIN_AFTER-th transient failure in a row dials the bus again, never the first ones, never before any", () => {
    const dials = Array.from({ length: 10 }, (_, i) => i).filter((n) => dialAgainAfter(n));
    assert.deepEqual(dials, [DIAL_AGAIN_AFTER, 2 * DIAL_AGAIN_AFTER, 3 * DIAL_AGAIN_AFTER].filter((n) => n < 10));
    assert.ok(DIAL_AGAIN_AFTER > 1, "one lost answer is not a lost connection");
  });
});

describe("BUS_READY_DELAYS_MS", () => {
  it("a start waits about a minute for JetStream to answer, asking at least every second", () => {
    const total = BUS_READY_DELAYS_MS.reduce((a, b) => a + b, 0);
    assert.ok(total >= 45_000 && total <= 90_000, `${total} ms`);
    assert.ok(BUS_READY_DELAYS_MS.every((ms) => ms > 0 && ms <= 1_000));
  });
});
