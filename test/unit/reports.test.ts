import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { fakeReports } from "../support/fakeReports.ts";
import { reportsVerb } from "../../src/push/reports.ts";
import type { ReportsReply } from "../../src/contracts/verbs.ts";
import { given, GENESIS, enrolment } from "../support/givenWhenThen.ts";
import { askShell } from "../support/shellVerb.ts";

const report = (node: string) => ({ v: 1, node, digest: `d-${node}`, ok: true });

describe("reports (the controller's reports verb)", () => {
  // web1 reported, then was removed: the REPORTS stream keeps its last report (one per node).
  const stored = { alpha: report("alpha"), web1: report("web1"), zeta: report("zeta") };
  const removedWeb1 = () => given(GENESIS, ...enrolment("alpha"), ...enrolment("web1"), ...enrolment("zeta"), { type: "NodeRemoved", node: "web1" }).state.nodes;

  it("R55: lists the last report of every enrolled node, and leaves out a removed node's, as mesh nodes leaves the node out", async () => {
    const verb = reportsVerb(fakeReports(stored), async () => removedWeb1());
    const reply = await askShell("reports", verb, {}, "operator-ann") as ReportsReply;
    assert.equal(reply.ok, true);
    assert.deepEqual(reply.reports.map((r) => r.node), ["alpha", "zeta"]);
  });

  it("pages over the enrolled nodes only: a removed node takes no place on a page", async () => {
    const verb = reportsVerb(fakeReports(stored), async () => removedWeb1());
    const first = await askShell("reports", verb, { limit: 1 }, "operator-ann") as ReportsReply;
    assert.deepEqual(first.reports.map((r) => r.node), ["alpha"]);
    assert.equal(first.next, "alpha");
    const second = await askShell("reports", verb, { limit: 1, after: first.next }, "operator-ann") as ReportsReply;
    assert.deepEqual(second.reports.map((r) => r.node), ["zeta"]);
    assert.equal(second.next, undefined);
  });

  it("refuses an --after naming no enrolled node (unknown-node, field after), never a page as if it were fine (found by a new-user trial)", async () => {
    const verb = reportsVerb(fakeReports(stored), async () => removedWeb1());
    for (const after of ["nosuch", "web1"]) {
      const reply = await askShell("reports", verb, { after }, "operator-ann");
      assert.equal(reply.ok, false, after);
      assert.equal(!reply.ok && reply.error.code, "unknown-node");
      assert.equal(!reply.ok && reply.error.field, "after");
    }
  });
});
