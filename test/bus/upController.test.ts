import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { up, UpError, type Launcher } from "../../src/up/up.ts";
import { stopAll } from "../../src/up/processes.ts";
import { freePort } from "../../installer/serverConfig.ts";

/**
 * `mesh up` whose controller exits while it starts (a configuration it refuses, R47): up says why
 * as soon as the process is gone, in one line with the controller's own last log line, instead of
 * waiting for an answer that cannot come. The launcher here starts nothing and says the
 * controller exited, as the detached launcher does from the controller's pid and log.
 */
describe("mesh up when its controller exits", () => {
  let root: string;
  before(() => { root = mkdtempSync(join(tmpdir(), "mesh-up-exit-")); });
  after(async () => {
    if (!root) return;
    await stopAll(join(root, ".mesh"));
    rmSync(root, { recursive: true, force: true });
  });

  it("R47: up fails at once with the controller's last log line, no refusal code (exit 2), and says the bus still runs", async () => {
    const why = "controller: cannot start: CATALOGUE max_msgs is 3: it would erase commits (R47): set it to -1";
    const launcher: Launcher = {
      controller: async () => undefined,
      host: async () => undefined,
      exited: () => why,
    };
    const dir = join(root, ".mesh");
    const error = await up({
      dir, log: () => undefined, launcher, node: "alpha", detachBus: false,
      brokerAddress: `tls://127.0.0.1:${await freePort()}`, timeoutMs: 30_000,
    }).then(() => null, (e: unknown) => e);
    assert.ok(error instanceof UpError, `expected UpError, got ${String(error)}`);
    assert.equal(error.code, undefined, "not a refusal: the controller never answered");
    assert.ok(error.message.includes(why), error.message);
    assert.match(error.message, /mesh down/);
    assert.equal(error.message.split("\n").length, 1);
  });
});
