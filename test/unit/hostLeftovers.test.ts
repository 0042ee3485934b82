import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { moduleRunner, type Runner } from "../../src/host/runner.ts";
import { moduleLogFile } from "../../src/host/moduleLog.ts";
import { initHostKeys } from "../../src/host/index.ts";
import { newUserKey } from "../../src/crypto/secrets.ts";
import { hostDeclaration } from "../support/hostDeclaration.ts";
import { waitFor } from "../support/natsServer.ts";

/**
 * R72: an agent killed without a goodbye (kill -9) leaves its modules running in their own process
 * groups; the agent started again over the same state folder stops each leftover before it starts
 * the module, so a module never runs twice. Real processes (test/fixtures/runnerModule.mjs), no bus.
 */

const FIXTURE = join(import.meta.dirname, "../fixtures/runnerModule.mjs");

/** Whether `pid` runs (a zombie waiting to be reaped has ended). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
  } catch {
    return false;
  }
}

describe("R72: modules a killed agent left running", () => {
  it("R72: the next runner on the same state folder stops the leftover (SIGTERM to its group) before it starts the module: one process of it, never two", async () => {
    const stateDir = mkdtempSync(join(tmpdir(), "mesh-leftovers-"));
    const { publicKey } = initHostKeys(stateDir);
    const declaration = hostDeclaration("alpha", publicKey, [
      { module: "echo", password: newUserKey().seed, extra: { run: { command: [process.execPath, FIXTURE, "steady"], grace: 2 } } },
    ], "digest-1");
    mkdirSync(join(stateDir, "modules", "echo"), { recursive: true });
    const lines: string[] = [];
    const options = { stateDir, log: (line: string) => { lines.push(line); }, onChange: () => undefined };
    let first: Runner | undefined;
    let second: Runner | undefined;
    let leftover: number | undefined;
    try {
      // The first agent starts the module, then is "killed": its runner is dropped, never stopped.
      first = moduleRunner(options);
      first.apply(declaration);
      leftover = await waitFor(() => first!.states()[0]?.pid, { name: "the first runner's module started" });
      second = moduleRunner(options);
      second.apply(declaration);
      const now = await waitFor(() => { const pid = second!.states()[0]?.pid; return pid !== undefined && pid !== leftover ? pid : undefined; },
        { timeoutMs: 10_000, name: "the second runner's module started" });
      assert.equal(alive(leftover), false, "the leftover was stopped first");
      assert.ok(alive(now));
      // Found by a trial: the module's log said it exited on SIGTERM, not why it was stopped.
      await second.stopAll();
      assert.match(readFileSync(moduleLogFile(stateDir, "echo"), "utf8"), /--- mesh: stopping it \(the agent is stopping\): SIGTERM, SIGKILL after 2 s/);
      assert.ok(lines.some((l) => l.includes(`module echo was left running by an agent that stopped without stopping it (pid ${leftover})`)), lines.join("\n"));
    } finally {
      await second?.stopAll();
      await first?.stopAll();
      if (leftover !== undefined && alive(leftover)) process.kill(-leftover, "SIGKILL");
      rmSync(stateDir, { recursive: true, force: true });
    }
  });
});
