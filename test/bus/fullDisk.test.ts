/**
 * Issue 26 (R76): a full disk never turns a committed command into a reported failure, and a
 * start refused for lack of space names the file. The controller's state folder (its records
 * mark, R43) lies on a small tmpfs the test fills; the records are on the test's nats-server.
 */
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freshControllerSuite } from "../support/controller.ts";
import { waitFor } from "../support/natsServer.ts";
import { fillDisk, mountSkip, mountTmpfs, unmount } from "../support/mounts.ts";
import { MarkUnwritable, readRecordsMark, recordsMarkPath } from "../../src/bootstrap/recordsMark.ts";
import { controllerExit, logFile } from "../../src/up/processes.ts";
import { exitRecordFile, recordExit, reserveExitRecord } from "../../src/up/exitRecord.ts";

import { supervise } from "../../src/up/supervisor.ts";
import { runningPid } from "../../src/up/processes.ts";
import { genesis } from "../../installer/genesis.ts";
import { freePort } from "../../installer/serverConfig.ts";
import { stopPid } from "../../installer/bus.ts";
import { readBusCredential } from "../../src/files/index.ts";
import { connectToBus } from "../../src/bus/connect.ts";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { CATALOGUE_STREAM, catalogueSubject } from "../../src/names.ts";

const REPO = fileURLToPath(new URL("../../", import.meta.url));

/** A folder on a fresh tmpfs of `bytes` (default 256 KiB), unmounted and removed in `after`. */
function smallDisk(bytes = 256 * 1024): { readonly dir: string } {
  const disk = { dir: "" };
  before(() => {
    disk.dir = mkdtempSync(join(tmpdir(), "mesh-full-disk-"));
    mountTmpfs(disk.dir, bytes);
  });
  after(() => {
    unmount(disk.dir);
    rmSync(disk.dir, { recursive: true, force: true });
  });
  return disk;
}

describe("R76: commands committed while the records mark's disk is full", { skip: mountSkip }, () => {
  const suite = freshControllerSuite();
  const disk = smallDisk();

  it("R76 R43: are answered as applied, none as failed; the mark catches up by itself once space returns", async () => {
    const stateDir = join(disk.dir, "state");
    mkdirSync(stateDir);
    const controller = await suite.fixture.start({ ...suite.fixture.env, MESH_CONTROLLER_STATE_DIR: stateDir });
    const filler = fillDisk(disk.dir);
    // 100 advances of about 60 bytes each outgrow the page the mark's file holds now.
    for (let i = 0; i < 100; i += 1) await suite.fixture.enrol(`full-${i}`);
    const folded = controller.catalogue.state.sequence;
    assert.ok((readRecordsMark(stateDir)?.lastSequence ?? 0) < folded, "the mark could not follow on the full disk");
    assert.ok(controller.lines.some((line) => line.startsWith("error") && line.includes(recordsMarkPath(stateDir))), "the log says the mark's file cannot be written");
    rmSync(filler);
    await waitFor(() => readRecordsMark(stateDir)?.lastSequence === folded, { timeoutMs: 15_000, name: "the mark caught up with no command sent" });
  });
});

describe("R76: a controller started on a full disk", { skip: mountSkip }, () => {
  const suite = freshControllerSuite();
  const disk = smallDisk();

  it("R76: refuses to start naming the mark's file and the free space it needs; starts once space returns", async () => {
    const stateDir = join(disk.dir, "state");
    mkdirSync(stateDir);
    const filler = fillDisk(disk.dir);
    const env = { ...suite.fixture.env, MESH_CONTROLLER_STATE_DIR: stateDir };
    await assert.rejects(suite.fixture.start(env), (error: unknown) =>
      error instanceof MarkUnwritable && error.file === recordsMarkPath(stateDir) && error.neededBytes > 0 && error.freeBytes !== null
      && error.message.includes(error.file) && error.message.includes(String(error.neededBytes)));
    rmSync(filler);
    const controller = await suite.fixture.start(env);
    assert.equal(readRecordsMark(stateDir)?.lastSequence, controller.catalogue.state.sequence);
  });
});

/** Runs `code` (an ES module importing from the repository) in a child node with its stdout and stderr appended to `logFile`. */
function childWithLogOn(logFile: string, code: string): { status: number | null } {
  const fd = openSync(logFile, "a");
  try {
    return spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code], { cwd: REPO, stdio: ["ignore", fd, fd], timeout: 30_000 });
  } finally {
    closeSync(fd);
  }
}

describe("R76: a process whose log lies on a full disk", { skip: mountSkip }, () => {
  const disk = smallDisk();

  for (const [what, make] of [
    ["the controller's line log (mesh controller: stderr)", `(await import("./src/bootstrap/log.ts")).lineLog(process.stderr).info`],
    ["the log of a process mesh up starts (stdout)", `(await import("./src/bootstrap/log.ts")).processLog()`],
  ] as const) {
    it(`R76: ${what} drops lines instead of dying for them, and says how many it dropped once space returns`, () => {
      const logFile = join(disk.dir, `${what.length}.log`);
      const filler = fillDisk(disk.dir);
      const run = childWithLogOn(logFile, `
        import { rmSync } from "node:fs";
        const log = ${make};
        for (let i = 0; i < 200; i += 1) log("controller: reconnected " + "x".repeat(100));
        await new Promise((resolve) => setTimeout(resolve, 100));
        rmSync(${JSON.stringify(filler)});
        log("space is back");
        await new Promise((resolve) => setTimeout(resolve, 100));
      `);
      assert.equal(run.status, 0, "the process did not die for its log");
      const lines = readFileSync(logFile, "utf8").split("\n").filter(Boolean);
      assert.match(lines.at(-1)!, /space is back$/);
      assert.match(lines.at(-2)!, /\d+ log lines? dropped \(ENOSPC\)/);
    });
  }
});

describe("R76: why a process of mesh up stopped, on a full disk", { skip: mountSkip }, () => {
  const disk = smallDisk();

  it("R76: its exit record, reserved at its start, takes the reason on a full disk, and mesh status gives that reason, not the log's cut-off last line", () => {
    const dir = join(disk.dir, "mesh");
    mkdirSync(join(dir, "logs"), { recursive: true });
    mkdirSync(join(dir, "run"));
    writeFileSync(logFile(dir, "controller"), "2026-12-02T00:00:00.000Z controller: reconnected\n");
    const dead = spawnSync("true").pid!;
    writeFileSync(join(dir, "run", "controller.pid"), `${dead}\n`);
    reserveExitRecord(exitRecordFile(dir, "controller"));
    const filler = fillDisk(disk.dir);
    try {
      assert.equal(recordExit(exitRecordFile(dir, "controller"), "controller: cannot start: the records mark cannot be written (ENOSPC)"), true);
      const said = controllerExit(dir);
      assert.match(said ?? "", /cannot start: the records mark cannot be written/);
      assert.doesNotMatch(said ?? "", /reconnected/);
    } finally {
      rmSync(filler);
    }
  });

  it("R76: a process that recorded no reason is said to have recorded none, its log's last line named as such", () => {
    const dir = join(disk.dir, "mesh-silent");
    mkdirSync(join(dir, "logs"), { recursive: true });
    mkdirSync(join(dir, "run"));
    writeFileSync(logFile(dir, "controller"), "2026-12-02T00:00:00.000Z controller: reconnected\n");
    writeFileSync(join(dir, "run", "controller.pid"), `${spawnSync("true").pid!}\n`);
    assert.match(controllerExit(dir) ?? "", /recorded no reason/);
  });
});

describe("R76: the mesh recovers by itself when space returns", { skip: mountSkip }, () => {
  const abort = new AbortController();
  let supervising: Promise<void> = Promise.resolve();
  let dir = "";
  // Registered before smallDisk's: hooks run in order, and the bus must stop before its disk goes.
  after(async () => {
    abort.abort();
    await supervising;
    const bus = runningPid(dir, "bus");
    if (bus !== null) await stopPid(bus, 1_000);
  });
  const disk = smallDisk(16 * 1024 * 1024);

  it("R76: a bus whose JetStream stopped answering on a full disk is restarted by the supervisor once space returns, which it says", async () => {
    dir = join(disk.dir, "mesh");
    const made = await genesis({ dir, brokerAddress: `tls://127.0.0.1:${await freePort()}`, log: () => {}, monitorPort: await freePort() });
    const lines: string[] = [];
    // Genesis leaves the bus as mesh up does: detached, its pid recorded. The supervisor looks every 0.5 s.
    supervising = supervise(dir, (line) => lines.push(line), { env: {}, signal: abort.signal, everyMs: 500 });
    const credential = readBusCredential(made.paths.controllerCredential);
    const nc = await connectToBus(credential, { reconnect: false });
    const filler = fillDisk(disk.dir);
    try {
      const js = jetstream(nc, { timeout: 2_000 });
      for (let i = 0; i < 20; i += 1) {
        const stored = await js.publish(catalogueSubject("test", "filler"), new Uint8Array(16 * 1024), { msgID: `filler-${i}` }).then(() => true, () => false);
        if (!stored) break;
      }
    } finally {
      await nc.close().catch(() => undefined);
      rmSync(filler);
    }
    await waitFor(async () => {
      const fresh = await connectToBus(credential, { reconnect: false }).catch(() => null);
      if (fresh === null) return false;
      try {
        return (await (await jetstreamManager(fresh, { timeout: 2_000 })).streams.info(CATALOGUE_STREAM)).state.messages > 0;
      } catch {
        return false;
      } finally {
        await fresh.close().catch(() => undefined);
      }
    }, { timeoutMs: 45_000, intervalMs: 500, name: "JetStream answers again, the records kept" });
    assert.ok(lines.some((line) => /starting bus again: its JetStream did not answer/.test(line)), `the supervisor said why: ${lines.join(" | ")}`);
    assert.ok(lines.some((line) => /supervisor: bus started again/.test(line)));
  });
});

