/**
 * What the controller believes of a node's report (R43, R44, R64), pure: src/bootstrap/reportWatch.ts
 * judgeReport, reportAhead and installedListOf, without a server. The bus side (a node's real
 * credential publishing forged reports to a real controller) is test/bus/forgedReports.test.ts.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { installedListOf, judgeReport, reportAhead, type InstalledList, type ReportJudgement } from "../../src/bootstrap/reportWatch.ts";
import type { HostReport } from "../../src/contracts/report.ts";
import type { RecordsFact } from "../../src/crypto/secrets.ts";
import { declarationSubject, reportSubject, toolSubject } from "../../src/names.ts";
import { GENESIS, enrolment, registration, stateOf } from "../support/givenWhenThen.ts";

/** A stand-in for the mesh key's tag: what only the controller could write for `fact`. */
const tagOf = (fact: RecordsFact) => `tag:${fact.node}:${fact.digest}:${fact.recordsSequence}`;
const verify = (fact: RecordsFact, tag: string) => tag === tagOf(fact);

describe("judgeReport (R43): a report speaks for the node of its subject, and claims records only with the controller's tag", () => {
  it("R43 R64: every combination of subject, named node, records sequence and tag is judged as the rules say", () => {
    const KNOWN = 46;
    const subjects = [reportSubject("vm"), reportSubject("evil"), reportSubject(""), declarationSubject("vm"), toolSubject("vm", "report")];
    const named = ["vm", "evil", "web2"];
    const sequences = [undefined, 0, KNOWN - 1, KNOWN, KNOWN + 1, 999999];
    const digests = ["x", "y"];
    let judged = 0;
    for (const subject of subjects) for (const node of named) for (const recordsSequence of sequences) for (const digest of digests) {
      // The tags a node could attach: none, its own tag for this claim (only the controller makes one),
      // one for another node, another digest, another sequence, and rubbish.
      const tags: Array<string | undefined> = [undefined, "rubbish"];
      if (recordsSequence !== undefined) {
        tags.push(
          tagOf({ node, digest, recordsSequence }), tagOf({ node: "vm", digest, recordsSequence }), tagOf({ node: "evil", digest, recordsSequence }),
          tagOf({ node, digest: digest === "x" ? "y" : "x", recordsSequence }), tagOf({ node, digest, recordsSequence: recordsSequence + 1 }),
        );
      }
      for (const recordsTag of tags) {
        const report: HostReport = {
          node, digest, ok: true,
          ...(recordsSequence === undefined ? {} : { recordsSequence }),
          ...(recordsTag === undefined ? {} : { recordsTag }),
        };
        const got = judgeReport(subject, report, KNOWN, verify);
        judged += 1;
        const of = subject === reportSubject("vm") ? "vm" : subject === reportSubject("evil") ? "evil" : null;
        let want: ReportJudgement;
        if (of === null) want = { kind: "not-a-report" };
        else if (node !== of) want = { kind: "other-node", node: of, named: node };
        else if (recordsSequence === undefined || recordsSequence <= KNOWN) want = { kind: "report", node: of };
        else if (recordsTag === undefined) want = { kind: "untagged", node: of, sequence: recordsSequence };
        else if (recordsTag !== tagOf({ node: of, digest, recordsSequence })) want = { kind: "tag-refused", node: of, sequence: recordsSequence };
        else want = { kind: "ahead", node: of, sequence: recordsSequence };
        assert.deepEqual(got, want, JSON.stringify({ subject, report }));
      }
    }
    assert.ok(judged > 500, `${judged} reports judged`);
  });

  it("R43: only a claim past what the controller accounts for is checked against its tag (the common report costs no check)", () => {
    let checks = 0;
    const counting = (fact: RecordsFact, tag: string) => { checks += 1; return verify(fact, tag); };
    judgeReport(reportSubject("vm"), { node: "vm", digest: "x", ok: true, recordsSequence: 46, recordsTag: "t" }, 46, counting);
    judgeReport(reportSubject("vm"), { node: "evil", digest: "x", ok: true, recordsSequence: 99, recordsTag: "t" }, 46, counting);
    assert.equal(checks, 0);
    judgeReport(reportSubject("vm"), { node: "vm", digest: "x", ok: true, recordsSequence: 47, recordsTag: "t" }, 46, counting);
    assert.equal(checks, 1);
  });
});

describe("reportAhead (R43)", () => {
  it("R43: a verified claim past the records' end is evidence naming the node and both sequences; at or below it, none", () => {
    for (let sequence = 0; sequence <= 6; sequence += 1) {
      for (let last = 0; last <= 6; last += 1) {
        const evidence = reportAhead("vm", sequence, last);
        if (sequence <= last) assert.equal(evidence, null);
        else {
          assert.equal(evidence?.kind, "host-report-ahead");
          assert.ok(evidence?.detail.includes("node vm") && evidence.detail.includes(`sequence ${sequence}`) && evidence.detail.includes(`end at ${last}`), evidence?.detail);
        }
      }
    }
  });
});

describe("installedListOf (R44 R64): only a holder of mesh-broker in the records says what list the bus runs", () => {
  const broker = { name: "broker", version: "1", seats: { "mesh-broker": { protocol: "nats" } }, claims: ["mesh-broker"] };
  const list = (sequence: number, user: string): InstalledList => ({ sequence, users: [user], keys: { [user]: `U${user}` } });

  it("R44 R64: a list reported by a node holding no mesh-broker counts for nothing, whatever its records sequence; the holder's does", () => {
    const state = stateOf([GENESIS, ...enrolment("vm"), ...enrolment("evil"), registration(broker), { type: "ModuleAssigned", module: "broker", node: "vm" }]);
    const lists = new Map([["evil", list(2000000, "node-ghost")]]);
    assert.equal(installedListOf(state, lists), undefined, "evil's word alone: no list");
    lists.set("vm", list(3, "node-late"));
    assert.deepEqual(installedListOf(state, lists), list(3, "node-late"));
  });

  it("R44: with no holder of mesh-broker no list counts; with several, the report of the highest records sequence, the first holder by name on a tie", () => {
    const none = stateOf([GENESIS, ...enrolment("vm")]);
    assert.equal(installedListOf(none, new Map([["vm", list(1, "a")]])), undefined);
    const two = stateOf([GENESIS, ...enrolment("a1"), ...enrolment("b1"), registration(broker),
      { type: "ModuleAssigned", module: "broker", node: "a1" }, { type: "ModuleAssigned", module: "broker", node: "b1" }]);
    assert.deepEqual(installedListOf(two, new Map([["a1", list(5, "x")], ["b1", list(7, "y")]])), list(7, "y"));
    assert.deepEqual(installedListOf(two, new Map([["a1", list(7, "x")], ["b1", list(7, "y")]])), list(7, "x"));
    assert.deepEqual(installedListOf(two, new Map([["b1", list(0, "y")]])), list(0, "y"));
  });
});
