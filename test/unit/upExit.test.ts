import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { upExitCode } from "../../src/cli/up.ts";
import { EXIT_REFUSED, EXIT_USAGE, type CliIo } from "../../src/cli/context.ts";
import { runCli } from "../../src/cli/run.ts";
import { UpError } from "../../src/up/up.ts";
import { controllerExit, recordPid } from "../../src/up/processes.ts";
import { InstallerError } from "../../installer/tls.ts";
import { ConfigError } from "../../src/config.ts";

/**
 * How `mesh up` ends when a step fails, by the README's exit codes (1 refused by the controller,
 * 2 a usage, configuration or connection error), and how it tells that the controller it started
 * has exited.
 */
describe("mesh up: exit codes", () => {
  it("a step the controller answered and refused (records-behind) exits 1, as every refusal does", () => {
    assert.equal(upExitCode(new UpError("the controller refused `mesh nodes` (records-behind): ...", "records-behind")), EXIT_REFUSED);
  });

  it("a controller that did not answer or exited, an installation or a configuration error exits 2", () => {
    assert.equal(upExitCode(new UpError("mesh up: the controller exited: controller: cannot start: ...")), EXIT_USAGE);
    assert.equal(upExitCode(new InstallerError("nats-server is not installed")), EXIT_USAGE);
    assert.equal(upExitCode(new ConfigError(["MESH_KEY_FILE"], "MESH_KEY_FILE is missing")), EXIT_USAGE);
  });
});

describe("mesh up: a controller that exited", () => {
  let dir: string;
  let gone: number;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "mesh-up-exit-"));
    gone = spawnSync(process.execPath, ["-e", ""]).pid;
  });
  after(() => { rmSync(dir, { recursive: true, force: true }); });

  it("is named with the last line of its log, the daemon's own reason, without the time stamp", () => {
    const mesh = join(dir, "exited");
    recordPid(mesh, "controller", gone);
    mkdirSync(join(mesh, "logs"), { recursive: true });
    writeFileSync(join(mesh, "logs", "controller.log"), [
      "2026-12-01T10:00:00.000Z controller: running (pid 1)",
      "2026-12-01T10:05:00.000Z controller: cannot start: CATALOGUE max_msgs is 3: it would erase commits (R47): set it to -1",
      "",
    ].join("\n"));
    const said = controllerExit(mesh);
    assert.ok(said !== undefined);
    assert.match(said, /controller: cannot start: CATALOGUE max_msgs is 3/);
    assert.doesNotMatch(said, /2026-12-01T10:05/);
    assert.ok(said.includes(join(mesh, "logs", "controller.log")), "names its log");
  });

  it("is not named while it runs, nor where mesh up never started one", () => {
    const running = join(dir, "running");
    recordPid(running, "controller", process.pid);
    assert.equal(controllerExit(running), undefined);
    assert.equal(controllerExit(join(dir, "never")), undefined);
  });
});

describe("mesh up --json when a step fails", () => {
  let dir: string;
  before(() => { dir = mkdtempSync(join(tmpdir(), "mesh-up-json-")); });
  after(() => { rmSync(dir, { recursive: true, force: true }); });

  it("prints one JSON object with ok false and the error's code, as every verb does, and never the password typed in the address (R3)", async () => {
    let out = "";
    const io: CliIo = { stdout: { write: (s: string) => { out += s; } }, stderr: { write: () => true }, env: {} };
    assert.equal(await runCli(["up", "--dir", join(dir, "m"), "--address", "tls://u:hunter2secret@h.example:4222", "--json"], io), EXIT_USAGE);
    const printed = JSON.parse(out) as { ok: boolean; error: { code: string; message: string } };
    assert.equal(printed.ok, false);
    assert.equal(printed.error.code, "setup");
    assert.ok(!out.includes("hunter2secret"));
  });
});
