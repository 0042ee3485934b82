/**
 * R76: the supervisor of `mesh up` starts again what stopped (src/up/supervisor.ts planRestarts),
 * pure: what it saw, what it remembers, the time.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { planRestarts, restartPause, RESTART_PAUSE_MAX_MS, RESTART_PAUSE_MS, SILENT_CHECKS, STABLE_AFTER_MS, STORE_FREE_BYTES, type Observed, type Watched } from "../../src/up/supervisor.ts";

const seen = (name: string, alive: boolean, extra: Partial<Observed> = {}): Observed => ({ name, recorded: true, alive, ...extra });

describe("R76: the supervisor's plan", () => {
  it("R76: a recorded process that is not running is started again, one stopped by mesh down (no pid recorded) is not", () => {
    const { restarts } = planRestarts([seen("controller", false), seen("host", false, { recorded: false }), seen("bus", true)], new Map(), 0);
    assert.deepEqual(restarts.map((r) => r.name), ["controller"]);
  });

  it("R76: a bus server whose JetStream is silent is restarted after SILENT_CHECKS checks in a row, not before; an answer starts the count again", () => {
    let memory = new Map<string, Watched>();
    let now = 0;
    const check = (jetstream: "answers" | "silent") => {
      const planned = planRestarts([seen("bus", true, { jetstream })], memory, (now += 2_000));
      memory = planned.memory;
      return planned.restarts.map((r) => r.name);
    };
    for (let i = 1; i < SILENT_CHECKS; i += 1) assert.deepEqual(check("silent"), []);
    assert.deepEqual(check("answers"), [], "an answer in between");
    for (let i = 1; i < SILENT_CHECKS; i += 1) assert.deepEqual(check("silent"), []);
    assert.deepEqual(check("silent"), ["bus"]);
  });

  it("R76: a process that keeps stopping waits a pause that doubles up to the max, and starts from the first pause again once it ran long enough", () => {
    assert.equal(restartPause(1), RESTART_PAUSE_MS);
    assert.equal(restartPause(2), 2 * RESTART_PAUSE_MS);
    assert.equal(restartPause(30), RESTART_PAUSE_MAX_MS);
    let memory = new Map<string, Watched>();
    const at = (now: number, alive: boolean) => {
      const planned = planRestarts([seen("host", alive)], memory, now);
      memory = planned.memory;
      return planned.restarts.length;
    };
    assert.equal(at(0, false), 1, "the first start again is at once");
    assert.equal(at(RESTART_PAUSE_MS - 1, false), 0, "the next waits its pause");
    assert.equal(at(RESTART_PAUSE_MS, false), 1);
    assert.equal(at(RESTART_PAUSE_MS + 2 * RESTART_PAUSE_MS - 1, false), 0, "a doubled pause");
    assert.equal(at(RESTART_PAUSE_MS + STABLE_AFTER_MS, true), 0, "it ran long enough");
    assert.equal(memory.get("host")?.restarts, 0);
  });

  it("R76: a silent bus whose store's disk is still full waits for space, said once, and is restarted once space returns", () => {
    let memory = new Map<string, Watched>();
    let now = 0;
    const check = (storeFreeBytes: number) => {
      const planned = planRestarts([seen("bus", true, { jetstream: "silent", storeFreeBytes })], memory, (now += 2_000));
      memory = planned.memory;
      return { restarted: planned.restarts.map((r) => r.name), waiting: planned.waiting.map((r) => r.name) };
    };
    const full = STORE_FREE_BYTES - 1;
    for (let i = 1; i < SILENT_CHECKS; i += 1) assert.deepEqual(check(full), { restarted: [], waiting: [] });
    assert.deepEqual(check(full), { restarted: [], waiting: ["bus"] });
    assert.deepEqual(check(full), { restarted: [], waiting: [] }, "said once");
    assert.deepEqual(check(STORE_FREE_BYTES), { restarted: ["bus"], waiting: [] });
  });
});
