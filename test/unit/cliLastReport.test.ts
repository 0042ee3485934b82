import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { lastReportOf, lastReportText } from "../../src/cli/lastReport.ts";

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
