import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LOGS_REPLY_MAX_BYTES, isLogFile, moduleLogFile, openModuleLog, readModuleLog } from "../../src/host/moduleLog.ts";

/** A module's output file (R72): rotated by size, two old files kept, read back bounded. */
describe("R72: a module's log", () => {
  let dir: string;
  before(() => { dir = mkdtempSync(join(tmpdir(), "mesh-module-log-")); });
  after(() => { rmSync(dir, { recursive: true, force: true }); });

  // Found by an attacker's trial: a link in the logs folder served any file through `mesh logs`.
  it("R72: a log that is a link is neither read nor written through", () => {
    const secret = join(dir, "secret.txt");
    writeFileSync(secret, "node seed\n");
    const file = moduleLogFile(dir, "linked");
    openModuleLog(file).close(); // makes the logs folder
    rmSync(file, { force: true });
    symlinkSync(secret, file);
    assert.equal(isLogFile(file), false);
    assert.deepEqual(readModuleLog(file, 10), { text: "", truncated: false, size: 0 });
    const log = openModuleLog(file);
    log.write("appended\n");
    log.close();
    assert.equal(readFileSync(secret, "utf8"), "node seed\n");
  });

  it("R72: output past the bound rotates, keeping two old files, none over the bound by more than one write", () => {
    const file = moduleLogFile(dir, "flood");
    const log = openModuleLog(file, 10_000);
    for (let i = 0; i < 100; i++) log.write(`${String(i).padStart(4, "0")} ${"x".repeat(995)}\n`);
    log.close();
    for (const f of [file, `${file}.1`, `${file}.2`]) if (existsSync(f)) assert.ok(statSync(f).size < 11_000, `${f}: ${statSync(f).size}`);
    assert.ok(existsSync(`${file}.2`));
    assert.equal(existsSync(`${file}.3`), false);
    const tail = readModuleLog(file, 3);
    assert.deepEqual(tail.text.trimEnd().split("\n").map((l) => l.slice(0, 4)), ["0097", "0098", "0099"]);
    assert.equal(tail.truncated, true);
  });

  it("R72: a follower gets what was written since its offset, and the whole file again after a rotation", () => {
    const file = moduleLogFile(dir, "follow");
    const log = openModuleLog(file, 1_000_000);
    log.write("one\n");
    const first = readModuleLog(file, 10);
    log.write("two\n");
    assert.equal(readModuleLog(file, 10, undefined, first.size).text, "two\n");
    assert.equal(readModuleLog(file, 10, undefined, 10_000).text, "one\ntwo\n", "an offset past the end reads from the start");
    log.close();
  });

  it("R72: an answer carries at most LOGS_REPLY_MAX_BYTES whatever is asked", () => {
    const file = moduleLogFile(dir, "big");
    const log = openModuleLog(file, 10 * LOGS_REPLY_MAX_BYTES);
    for (let i = 0; i < 600; i++) log.write(`${"y".repeat(1023)}\n`);
    log.close();
    const tail = readModuleLog(file, 100_000, 10 * LOGS_REPLY_MAX_BYTES);
    assert.ok(Buffer.byteLength(tail.text) <= LOGS_REPLY_MAX_BYTES);
    assert.equal(tail.truncated, true);
  });
});
