import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { enrolRequest } from "../support/enrol.ts";
import { startNatsServer, waitFor } from "../support/natsServer.ts";
import { controllerFixture } from "../support/controller.ts";
import { readRecordsMark } from "../../src/bootstrap/recordsMark.ts";
import type { Controller } from "../../src/bootstrap/main.ts";

/** `promise`, or a rejection once `ms` passed (a clean-up that would hang). */
function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`not within ${ms} ms`)), ms); });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/**
 * R77: a failover is a pause. A standby folds the records while it waits for the lease (R61), so
 * its takeover folds only the last few commits; it serves nothing until it holds the lease.
 * One server suffices: the lease is the same bucket on one server as on three.
 */
describe("a standby controller waiting for the lease", () => {
  it("R77: a standby keeps the records folded while it waits, serving nothing, and serves once the active controller dies", async (t) => {
    const server = await startNatsServer();
    const fixture = await controllerFixture(server);
    const standbyDir = mkdtempSync(join(tmpdir(), "mesh-standby-"));
    const env = { ...fixture.env, MESH_CONTROLLER_LEASE_MS: "2000" };
    let standbyStart: Promise<Controller | undefined> = Promise.resolve(undefined);
    // One clean-up in order: the active controller stops first (its lease released, so a standby
    // still waiting takes over and can be stopped), then the standby, then the server.
    t.after(async () => {
      await fixture.close();
      await within(standbyStart, 20_000).then((c) => c?.stop()).catch(() => undefined);
      await server.stop();
      rmSync(standbyDir, { recursive: true, force: true });
    });
    const active = await fixture.start(env);
    let standbyStarted = false;
    // Its own state folder: its records mark says how far it folded (R43), written as it folds.
    standbyStart = fixture.start({ ...env, MESH_CONTROLLER_STATE_DIR: standbyDir }).then((c) => { standbyStarted = true; return c; });
    const last = await fixture.send("node.enrol", enrolRequest("standby-a"));
    await fixture.send("node.enrol", enrolRequest("standby-b"));
    const sequence = active.catalogue.state.sequence;
    assert.ok(sequence >= Number(last.sequence) + 1);

    await waitFor(() => (readRecordsMark(standbyDir)?.lastSequence ?? 0) >= sequence, { timeoutMs: 10_000, name: "the standby folding the records while it waits" });
    assert.equal(standbyStarted, false, "the standby serves nothing while the lease is held");

    await active.nc.close(); // dies without a goodbye: its lease is not released
    const standby = (await standbyStart)!;
    const after = await fixture.send("node.enrol", enrolRequest("standby-c"));
    assert.equal(after.ok, true);
    assert.ok(standby.catalogue.state.sequence >= Number(after.sequence), "the standby served it");
  });
});
