import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  appliedReport, backoffBound, carryUnsent, listOutcomeText, backoffDelay, reportRetryDelay, REPORT_RETRY_MAX_MS, credentialChanged, NEW_NODE_BACKOFF_MAX_MS, driftedReport, failedReport, messageKind, planApply, planList, presentedSeed, readDeclaration, restatedReport, seedAfterRefusal,
} from "../../src/host/plan.ts";
import { Declaration } from "../../src/contracts/declaration.ts";
import { declarationSubject, userListPartSubject } from "../../src/names.ts";

/**
 * The host agent's plan without a server or files: what a message is, what applying a
 * declaration takes, what an assembled user list comes to, and every report. agent.ts carries
 * these out over the bus and on disk (test/bus/host.test.ts).
 */

const self = { address: "tls://bus.example:4222", user: "node-alpha", nkey: `U${"A".repeat(55)}`, fingerprint: "AA:BB" };
const list = { digest: "f".repeat(64), bytes: 10, parts: 2 };
const declared = (extra: Record<string, unknown> = {}): Declaration => Declaration.parse({ node: "alpha", digest: "d".repeat(64), ...extra });
const KEY_A = `U${"A".repeat(55)}`;
const KEY_B = `U${"B".repeat(55)}`;
const LIST_TEXT = `    {nkey: "${KEY_A}", permissions: {}}  # node-alpha\n    {nkey: "${KEY_B}", permissions: {}}  # module-broker\n`;
const LISTED = { users: ["node-alpha", "module-broker"], keys: { "node-alpha": KEY_A, "module-broker": KEY_B } };

describe("host plan: messages and declarations", () => {
  it("a message on the node's declaration subject is its declaration; anything else its filter brings is a user-list part", () => {
    assert.equal(messageKind(declarationSubject("alpha"), "alpha"), "declaration");
    assert.equal(messageKind(userListPartSubject("alpha", 0), "alpha"), "part");
  });

  it("R65: a message on any other subject (a pulled message of another node, a work item) is foreign, never a part", () => {
    for (const subject of [userListPartSubject("beta", 0), declarationSubject("beta"), "mesh.work.mesh-build.build", "mesh.declaration.alpha.users.", "mesh.declaration.alpha"]) {
      assert.equal(messageKind(subject, "alpha"), "foreign", subject);
    }
  });

  it("R32: a malformed declaration is reported not applied, naming its fields and its digest when it has one", () => {
    const read = readDeclaration({ node: "alpha", digest: "abc", modules: "nope" }, 7, "alpha");
    assert.ok(!read.ok);
    assert.deepEqual(read.report, { node: "alpha", digest: "abc", ok: false, error: "declaration #7 is malformed (modules)" });
    const notJson = readDeclaration(undefined, 8, "alpha");
    assert.ok(!notJson.ok);
    assert.equal(notJson.report.digest, "unknown");
    assert.ok(readDeclaration(declared(), 9, "alpha").ok);
  });

  it("R29 R50 R11: every case of applying a declaration: another node's refused; own credential adopted first; no list, a list with no bus, a list to assemble", () => {
    const other = planApply(declared({ node: "beta" }), "alpha", 3, true);
    assert.deepEqual(other, { ok: false, error: "declaration #3 is for node beta, not alpha" });
    assert.deepEqual(planApply(declared(), "alpha", 1, false), { ok: true, list: { kind: "none" } });
    assert.deepEqual(planApply(declared({ self }), "alpha", 1, false), { ok: true, adopt: self, list: { kind: "none" } });
    const noBus = planApply(declared({ userList: list }), "alpha", 1, false);
    assert.ok(noBus.ok && noBus.list.kind === "no-bus" && noBus.list.error.includes("--bus-include"));
    assert.deepEqual(planApply(declared({ userList: list, self }), "alpha", 1, true), { ok: true, adopt: self, list: { kind: "assemble", ref: list } });
  });

  it("R32: an assembled list is installed; missing parts keep the declaration pending and its list's parts; parts that disagree are discarded", () => {
    assert.deepEqual(planList({ ok: true, text: LIST_TEXT }, list), { kind: "install", text: LIST_TEXT });
    assert.deepEqual(planList({ ok: false, code: "missing-parts", missing: [1], message: "part 1 missing" }, list), { kind: "await-parts", missing: [1], keep: list.digest, error: "part 1 missing" });
    assert.deepEqual(planList({ ok: false, code: "wrong-digest", message: "bad" }, list), { kind: "refuse", discard: list.digest, error: "bad" });
    assert.deepEqual(planList({ ok: false, code: "wrong-size", message: "short" }, list), { kind: "refuse", discard: list.digest, error: "short" });
  });
});

describe("host plan: reports (R32, R43, R44, R55)", () => {
  it("R43 R44: an applied report carries the records' sequence and, with a list installed, its users and their keys (R64)", () => {
    assert.deepEqual(appliedReport("alpha", declared()), { node: "alpha", digest: "d".repeat(64), ok: true });
    assert.deepEqual(appliedReport("alpha", declared({ recordsSequence: 12 }), LIST_TEXT), { node: "alpha", digest: "d".repeat(64), ok: true, recordsSequence: 12, ...LISTED });
  });

  it("R43: every report about a declaration echoes the controller's tag on it as it came, and none when the declaration carried none (before the tag existed)", () => {
    const tagged = declared({ recordsSequence: 12, recordsTag: "t".repeat(43) });
    const echoed = { recordsSequence: 12, recordsTag: "t".repeat(43) };
    assert.deepEqual(appliedReport("alpha", tagged), { node: "alpha", digest: "d".repeat(64), ok: true, ...echoed });
    assert.deepEqual(failedReport("alpha", tagged, "no"), { node: "alpha", digest: "d".repeat(64), ok: false, error: "no", ...echoed });
    assert.deepEqual(restatedReport("alpha", { node: "alpha", digest: "x", ...echoed }), { node: "alpha", digest: "x", ok: true, ...echoed });
    assert.ok(!("recordsTag" in appliedReport("alpha", declared({ recordsSequence: 12 }))));
  });

  it("R32: a failed report has its error's first line and the missing parts, if any", () => {
    assert.deepEqual(failedReport("alpha", declared({ recordsSequence: 3 }), new Error("first\nsecond"), [0, 2]), {
      node: "alpha", digest: "d".repeat(64), ok: false, error: "first", recordsSequence: 3, missingParts: [0, 2],
    });
    assert.deepEqual(failedReport("alpha", declared(), "plain"), { node: "alpha", digest: "d".repeat(64), ok: false, error: "plain" });
  });

  it("R43 R44: at start the host restates its own last declaration (and its list's users), nothing when it holds none or another node's", () => {
    assert.equal(restatedReport("alpha", null), null);
    assert.equal(restatedReport("alpha", { node: "beta", digest: "x" }), null);
    assert.deepEqual(restatedReport("alpha", { node: "alpha", digest: "x", recordsSequence: 4 }, LIST_TEXT), { node: "alpha", digest: "x", ok: true, recordsSequence: 4, ...LISTED });
    assert.deepEqual(restatedReport("alpha", { node: "alpha", digest: "x" }), { node: "alpha", digest: "x", ok: true });
  });

  it("R55: a re-check's report is the last one with the drifted files (an earlier drift replaced), and its line names ten at most", () => {
    const files = Array.from({ length: 12 }, (_, i) => `f${i}`);
    const { report, line } = driftedReport("alpha", { node: "alpha", digest: "0123456789abcdef", ok: true, drift: ["old"] }, files, "interval");
    assert.deepEqual(report, { node: "alpha", digest: "0123456789abcdef", ok: true, drift: files });
    assert.ok(line.includes("12 file(s)") && line.includes("0123456789ab ") && line.includes("f9, and 2 more") && !line.includes("f10"));
  });
});

describe("host plan: a report replacing one not stored yet (R32, R55)", () => {
  const applied = { node: "alpha", digest: "e".repeat(64), ok: true };
  it("R55 (issue 25): a report replacing an unsent one carries that one's drift, with its own, sorted and once each", () => {
    assert.deepEqual(carryUnsent({ ...applied, digest: "d".repeat(64), drift: ["modules/web/env", "modules/a"] }, { ...applied, drift: ["modules/a", "modules/b"] }).drift, ["modules/a", "modules/b", "modules/web/env"]);
    assert.deepEqual(carryUnsent({ ...applied, drift: ["modules/web/env"] }, applied), { ...applied, drift: ["modules/web/env"] });
  });
  it("R32: without an unsent report, or one without drift, the report goes as it is", () => {
    assert.equal(carryUnsent(undefined, applied), applied);
    assert.equal(carryUnsent({ ...applied, ok: false, error: "x" }, applied), applied);
  });
});

describe("host plan: connection and credential", () => {
  it("the backoff doubles from its first delay up to its bound", () => {
    assert.deepEqual([1, 2, 3, 4, 5, 6, 7, 100].map((n) => backoffDelay(n, 500, 30_000)), [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000]);
  });

  it("R1 (issue 25): the backoff is jittered, three quarters to five quarters of its doubled delay, and never past its ceiling", () => {
    assert.deepEqual([0, 0.5, 1].map((r) => backoffDelay(3, 500, 30_000, r)), [1500, 2000, 2500]);
    assert.deepEqual([0, 1].map((r) => backoffDelay(100, 500, 30_000, r)), [22_500, 30_000], "jittered at the ceiling too");
    assert.ok([1, 2, 3, 4].every((n) => backoffDelay(n + 1, 500, 30_000, 0) > backoffDelay(n, 500, 30_000, 1)), "each step's shortest is longer than the last one's longest");
  });

  it("R1: a host the bus never admitted (nothing applied yet) waits at most NEW_NODE_BACKOFF_MAX_MS between attempts, so the first push's wait sees its report; once admitted, up to its own bound", () => {
    assert.equal(NEW_NODE_BACKOFF_MAX_MS, 5_000);
    assert.equal(backoffBound(30_000, false), NEW_NODE_BACKOFF_MAX_MS);
    assert.equal(backoffBound(30_000, true), 30_000);
    assert.equal(backoffBound(400, false), 400, "a smaller bound the caller set is kept");
    assert.deepEqual([1, 5, 100].map((n) => backoffDelay(n, 500, backoffBound(30_000, false))), [500, 5000, 5000]);
  });

  it("R32 R60: a report not stored is published again at most REPORT_RETRY_MAX_MS apart, whatever the connection's own bound", () => {
    assert.deepEqual([1, 2, 3, 4, 5, 100].map((n) => reportRetryDelay(n, 500, 30_000)), [500, 1000, REPORT_RETRY_MAX_MS, REPORT_RETRY_MAX_MS, REPORT_RETRY_MAX_MS, REPORT_RETRY_MAX_MS]);
    assert.ok(REPORT_RETRY_MAX_MS <= 2_000);
    assert.deepEqual([1, 5].map((n) => reportRetryDelay(n, 100, 400)), [100, 400], "a smaller bound the caller set is kept");
  });

  it("R50: the own credential is saved only when user, secret or pin differ", () => {
    const now = { user: "node-alpha", secret: "pw", fingerprint: "AA" };
    assert.equal(credentialChanged(now, { ...now }), false);
    assert.equal(credentialChanged(now, { ...now, secret: "new" }), true);
    assert.equal(credentialChanged(now, { ...now, user: "node-beta" }), true);
    assert.equal(credentialChanged(now, { ...now, fingerprint: "BB" }), true);
    assert.equal(credentialChanged({ user: "u", secret: "s" }, { user: "u", secret: "s", fingerprint: "" }), false);
  });
});

describe("host plan: which seed a (re)connect presents during a rotation (R50, R64)", () => {
  /** The seeds a run of attempts presents, each followed by the bus's verdict ("refused" turns it, "failed" is no verdict). */
  function attempts(verdicts: ReadonlyArray<"refused" | "failed">, pending: string | null = "new"): string[] {
    let prefer = false;
    return verdicts.map((verdict) => {
      const presented = presentedSeed("old", pending ?? undefined, prefer);
      prefer = verdict === "refused" ? seedAfterRefusal(presented.isPending) : presented.preferPending;
      return presented.seed;
    });
  }
  it("R50: the current seed until the bus refuses it, then the pending one, and back on a refusal of that", () => {
    assert.deepEqual(attempts(["refused", "refused", "refused"]), ["old", "new", "old"]);
  });
  it("R50: attempts that fail before authorization (a TLS timeout under load) do not use up the pending seed's turn", () => {
    assert.deepEqual(attempts(["refused", "failed", "failed"]), ["old", "new", "new"]);
    assert.deepEqual(attempts(["failed", "failed", "refused", "failed"]), ["old", "old", "old", "new"]);
  });
  it("R50: without a pending seed the current one, and no preference carried into the next rotation", () => {
    assert.deepEqual(attempts(["refused", "refused"], null), ["old", "old"]);
    assert.deepEqual(presentedSeed("old", undefined, true), { seed: "old", isPending: false, preferPending: false });
    assert.deepEqual(presentedSeed("same", "same", true).seed, "same");
  });
});

/**
 * Found by a new-user trial: on a cluster the host's log line said "user list unchanged" from the
 * first server's outcome alone, though another server was installed (a repair) or missed it.
 */
describe("host plan: the log's words for the user list on each server (R60)", () => {
  it("R60: names every server's outcome: installed (with its reload time), unchanged, missed", () => {
    assert.equal(listOutcomeText([
      { server: "bus-1", ok: true, changed: false },
      { server: "bus-2", ok: true, changed: true, reloadMs: 120 },
      { server: "bus-3", ok: true, changed: false },
    ]), "user list installed on bus-2 (reloaded in 120 ms), unchanged on bus-1, bus-3");
    assert.equal(listOutcomeText([
      { server: "bus-1", ok: true, changed: true, reloadMs: 5 },
      { server: "bus-2", ok: false, error: "down" },
    ]), "user list installed on bus-1 (reloaded in 5 ms), missed on bus-2");
  });

  it("one server (no names): reloaded in its time, or unchanged; nothing when no list was installed", () => {
    assert.equal(listOutcomeText([{ ok: true, changed: true, reloadMs: 40 }]), "user list reloaded in 40 ms");
    assert.equal(listOutcomeText([{ ok: true, changed: false }]), "user list unchanged");
    assert.equal(listOutcomeText([]), "");
  });
});
