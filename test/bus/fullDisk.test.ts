/**
 * Issue 26 (R76): a full disk never turns a committed command into a reported failure, and a
 * start refused for lack of space names the file. The controller's state folder (its records
 * mark, R43) lies on a small tmpfs the test fills; the records are on the test's nats-server.
 */
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freshControllerSuite } from "../support/controller.ts";
import { waitFor } from "../support/natsServer.ts";
import { fillDisk, mountSkip, mountTmpfs, unmount } from "../support/mounts.ts";
import { MarkUnwritable, readRecordsMark, recordsMarkPath } from "../../src/bootstrap/recordsMark.ts";

/** A folder on a fresh 256 KiB tmpfs, unmounted and removed in `after`. */
function smallDisk(): { readonly dir: string } {
  const disk = { dir: "" };
  before(() => {
    disk.dir = mkdtempSync(join(tmpdir(), "mesh-full-disk-"));
    mountTmpfs(disk.dir, 256 * 1024);
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
