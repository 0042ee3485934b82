import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUS_LOG_ROTATED_KEPT, busLogFileOf, busLogFiles, pruneRotatedLogs, rotatedLogs } from "../../src/host/busLog.ts";

/**
 * The bus's log is bounded (R70): nats-server 2.9.10 rotates it at a size but keeps every rotated
 * file, so the agent on the bus's machine prunes them. Pure parts, then the pruning of a folder.
 */
describe("the bus log's rotated files (R70)", () => {
  it("R70: a rotated file is the log's name and nats-server's time stamp; they sort oldest first; nothing else is one", () => {
    const names = [
      "bus.log", "bus.log.2026.12.02.04.10.05.000000002", "bus.log.2026.12.02.04.10.04.999999999", "bus-1.log.2026.12.02.04.10.04.000000001",
      "bus.log.old", "bus.log.2026.12.02", "controller.log", "bus.log.2026.12.02.04.10.05.000000001",
    ];
    assert.deepEqual(rotatedLogs("bus.log", names), [
      "bus.log.2026.12.02.04.10.04.999999999", "bus.log.2026.12.02.04.10.05.000000001", "bus.log.2026.12.02.04.10.05.000000002",
    ]);
    assert.deepEqual(rotatedLogs("bus-1.log", names), ["bus-1.log.2026.12.02.04.10.04.000000001"]);
  });

  it("R70: the log file a configuration names, or none (a bus configured before R70)", () => {
    assert.equal(busLogFileOf(`listen: "0.0.0.0:4222"\nlog_file: "/m/logs/bus.log"\nlogfile_size_limit: 10\n`), "/m/logs/bus.log");
    assert.equal(busLogFileOf(`listen: "0.0.0.0:4222"\n`), null);
  });

  it("R70: pruning keeps the newest BUS_LOG_ROTATED_KEPT rotated files and the live log, and leaves the other logs alone", (t) => {
    const dir = mkdtempSync(join(tmpdir(), "mesh-buslog-"));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const stamps = Array.from({ length: BUS_LOG_ROTATED_KEPT + 3 }, (_, i) => `bus.log.2026.12.02.04.10.${String(10 + i)}.000000000`);
    for (const name of ["bus.log", "controller.log", "bus-1.log.2026.12.02.04.10.00.000000000", ...stamps]) writeFileSync(join(dir, name), "x");
    const removed = pruneRotatedLogs(join(dir, "bus.log"));
    assert.deepEqual(removed, stamps.slice(0, 3).map((name) => join(dir, name)));
    assert.deepEqual(readdirSync(dir).sort(), ["bus-1.log.2026.12.02.04.10.00.000000000", "bus.log", ...stamps.slice(3), "controller.log"].sort());
    assert.deepEqual(pruneRotatedLogs(join(dir, "bus.log")), [], "again: nothing more");
    assert.ok(existsSync(join(dir, "bus.log")));
  });

  it("R70: the agent finds each server's log in its configuration file; one unreadable or naming none gives none", (t) => {
    const dir = mkdtempSync(join(tmpdir(), "mesh-buslog-"));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, "a.conf"), `log_file: "/m/logs/bus-1.log"\n`);
    writeFileSync(join(dir, "b.conf"), `listen: "127.0.0.1:4222"\n`);
    assert.deepEqual(busLogFiles([join(dir, "a.conf"), join(dir, "b.conf"), join(dir, "missing.conf")]), ["/m/logs/bus-1.log"]);
  });
});
