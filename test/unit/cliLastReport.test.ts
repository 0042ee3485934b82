import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { lastReportOf, lastReportText } from "../../src/cli/lastReport.ts";
import { moduleRunsText, type ModuleRun } from "../../src/contracts/report.ts";
import { appliedOf, renderSummary } from "../../src/up/summary.ts";

const SENT = "a".repeat(64);
const OLDER = "b".repeat(64);
const AT = "2026-12-01T03:00:00.000Z";

describe("mesh nodes: a node's last report as data (R55)", () => {
  it("R55: `lastReport` is an object (digest, outcome, at, drift, error, the digest it was sent) or null, and the table says it in one line", () => {
    assert.deepEqual(lastReportOf(SENT, { node: "n", at: AT, digest: SENT, ok: true, drift: ["a", "b"] }), { digest: SENT, outcome: "applied", at: AT, drift: ["a", "b"], sent: SENT });
    assert.deepEqual(lastReportOf(SENT, { node: "n", at: AT, digest: OLDER, ok: true }), { digest: OLDER, outcome: "applied-older", at: AT, drift: [], sent: SENT });
    assert.deepEqual(lastReportOf(null, { node: "n", at: AT, digest: SENT, ok: false, error: "no disk" }), { digest: SENT, outcome: "failed", at: AT, drift: [], sent: null, error: "no disk" });
    assert.equal(lastReportOf(SENT, undefined), null);
    assert.equal(lastReportText(lastReportOf(SENT, { node: "n", at: AT, digest: SENT, ok: true, drift: ["a", "b"] }), SENT), `aaaaaaaaaaaa applied at ${AT}, 2 drifted file(s) written back`);
    assert.equal(lastReportText(lastReportOf(SENT, { node: "n", at: AT, digest: OLDER, ok: true }), SENT), `bbbbbbbbbbbb applied an older one (sent aaaaaaaaaaaa) at ${AT}`);
    assert.equal(lastReportText(lastReportOf(SENT, { node: "n", at: AT, digest: SENT, ok: false, error: "no disk" }), SENT), `aaaaaaaaaaaa FAILED (no disk) at ${AT}`);
    assert.equal(lastReportText(null, SENT), "none: no report of what it was sent");
    assert.equal(lastReportText(null, null), "-");
  });
});

describe("mesh nodes, reports, status: what each node runs (R72)", () => {
  const modules: ModuleRun[] = [
    { module: "echo", state: "running", pid: 10, restarts: 0 },
    { module: "web", state: "exited", code: 1, restarts: 3, backoffUntil: "2026-12-01T03:00:05.000Z" },
    { module: "gone", state: "exited", code: null, error: "spawn nope ENOENT", restarts: 0, backoffUntil: "2026-12-01T03:00:01.000Z" },
    { module: "db", state: "runtime-missing", reason: "no podman or docker", restarts: 0 },
  ];

  it("R72: each module's run state in one line: running, exited with its code or error and when it starts again, runtime-missing", () => {
    assert.equal(moduleRunsText(modules),
      "echo running, web exited 1 (3 restarts, again at 03:00:05Z), gone exited (spawn nope ENOENT) (0 restarts, again at 03:00:01Z), db runtime-missing");
    assert.equal(moduleRunsText(undefined), "-");
  });

  it("R72: mesh nodes's last report line and mesh status's applied table name what runs", () => {
    const report = { node: "n", at: AT, digest: SENT, ok: true, modules };
    const last = lastReportOf(SENT, report);
    assert.deepEqual(last?.modules, modules);
    assert.match(lastReportText(last, SENT), /; runs: echo running, web exited 1/);
    const nodes = [{ name: "n", overlayName: null, hub: false, modules: ["echo"], credentialAddress: null, lastSent: SENT }];
    const applied = appliedOf(nodes, [report], null);
    assert.deepEqual(applied[0]!.modules, modules);
    const lines = renderSummary({ mesh: { genesisAddress: "tls://x:1", fingerprint: "F", dir: "" }, nodes, seats: [], busUsers: [], applied, processes: {} });
    assert.ok(lines.some((l) => l.includes("echo running, web exited 1")), lines.join("\n"));
  });
});
