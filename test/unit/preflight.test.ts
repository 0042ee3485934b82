import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * Issue 29: `npm start` and `npm test` on a fresh machine (scripts/preflight.mjs, their prestart
 * and pretest). Run with a PATH of its own: node and sh, plus a fake apt-get where a test needs one.
 */
const SCRIPT = fileURLToPath(new URL("../../scripts/preflight.mjs", import.meta.url));
const root = typeof process.getuid === "function" && process.getuid() === 0;

describe("npm start and npm test on a fresh machine (issue 29)", () => {
  let dir: string;
  let bin: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "mesh-preflight-"));
    bin = join(dir, "bin");
    mkdirSync(bin);
    symlinkSync(process.execPath, join(bin, "node"));
    symlinkSync("/bin/sh", join(bin, "sh"));
  });
  after(() => { if (dir) rmSync(dir, { recursive: true, force: true }); });

  const preflight = (script: string, file = SCRIPT) => spawnSync(process.execPath, [file, script], { encoding: "utf8", env: { PATH: bin } });

  it("issue 29: without nats-server and without apt, `npm start` stops with one line naming what to install", () => {
    const run = preflight("start");
    assert.equal(run.status, 1);
    assert.match(run.stderr, /^npm start: nats-server is not installed: .*install nats-server/);
    assert.equal(run.stderr.trim().split("\n").length, 1);
  });

  it("issue 29: without nats-server, `npm test` installs it through apt-get with a line saying so as root, else prints the sudo command", () => {
    const calls = join(dir, "apt-calls");
    writeFileSync(join(bin, "apt-get"), `#!/bin/sh\necho "$@" >> ${calls}\n`);
    chmodSync(join(bin, "apt-get"), 0o755);
    try {
      const run = preflight("test");
      if (root) {
        assert.equal(run.status, 0, run.stderr);
        assert.match(run.stderr, /^npm test: nats-server is not installed: installing .*apt-get install -y nats-server/);
        assert.match(readFileSync(calls, "utf8"), /^install -y -qq nats-server$/m);
      } else {
        assert.equal(run.status, 1);
        assert.match(run.stderr, /`sudo apt-get install -y nats-server`/);
      }
    } finally {
      rmSync(join(bin, "apt-get"));
    }
  });

  it("issue 29: `npm test` without the dev dependencies (--omit=dev) says to run `npm ci`, not `tsc: not found`", () => {
    const alone = join(dir, "alone");
    mkdirSync(alone);
    copyFileSync(SCRIPT, join(alone, "preflight.mjs"));
    const run = preflight("test", join(alone, "preflight.mjs"));
    assert.equal(run.status, 1);
    assert.match(run.stderr, /dev dependencies .*typescript.*`npm ci`/);
  });
});
