import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import type { JetStreamManager } from "@nats-io/jetstream";
import { readLastReport, readLastReports } from "../../src/bus/reports.ts";
import { reportSubject } from "../../src/names.ts";
import { stripComments, tsFiles } from "../support/sources.ts";

const ROOT = resolve(import.meta.dirname, "../..");

/** A JetStreamManager whose REPORTS answers `stored` by node (a thrown Error for `failing` nodes), counting reads in flight. */
function fakeStream(stored: Record<string, unknown>, failing: readonly string[] = []) {
  let inFlight = 0;
  let most = 0;
  const streams = {
    getMessage: async (_stream: string, query: { last_by_subj: string }) => {
      inFlight += 1;
      most = Math.max(most, inFlight);
      await new Promise((r) => setImmediate(r));
      inFlight -= 1;
      const node = Object.keys(stored).concat(failing).find((n) => reportSubject(n) === query.last_by_subj);
      if (node !== undefined && failing.includes(node)) throw new Error("no responders");
      if (node === undefined) return null;
      return { seq: 7, time: new Date("2026-01-01T00:00:00Z"), json: () => stored[node] };
    },
  };
  return { jsm: { streams } as unknown as JetStreamManager, most: () => most };
}

const report = (node: string, digest = "d1") => ({ v: 1, node, digest, ok: true });

describe("the REPORTS adapter (src/bus/reports.ts)", () => {
  it("R43 R65: a node's last stored report is stored, none, not a report, another node's, or a failed read, judged in one place", async () => {
    const { jsm } = fakeStream({ alpha: report("alpha"), beta: { v: 1, node: "beta" }, gamma: report("alpha") }, ["delta"]);
    const alpha = await readLastReport(jsm, "alpha");
    assert.equal(alpha.kind, "stored");
    assert.equal(alpha.kind === "stored" && alpha.stored.seq, 7);
    assert.equal((await readLastReport(jsm, "omega")).kind, "none");
    assert.equal((await readLastReport(jsm, "beta")).kind, "not-a-report");
    assert.equal((await readLastReport(jsm, "gamma")).kind, "other-node");
    assert.equal((await readLastReport(jsm, "delta")).kind, "failed");
  });

  it("R55: many nodes are read a batch at a time, every node answered", async () => {
    const nodes = Array.from({ length: 40 }, (_, i) => `n${i}`);
    const { jsm, most } = fakeStream(Object.fromEntries(nodes.map((n) => [n, report(n)])));
    const found = await readLastReports(jsm, nodes, { atOnce: 8 });
    assert.equal(found.size, 40);
    assert.ok([...found.values()].every((r) => r.kind === "stored"));
    assert.ok(most() <= 8, `at most 8 reads at once, saw ${most()}`);
  });

  it("only src/bus/reports.ts reads the REPORTS stream or subscribes to the report subjects", () => {
    const readers = tsFiles(join(ROOT, "src"))
      .filter((path) => /REPORTS_STREAM\s*,\s*\{\s*last_by_subj|subscribe\(\s*REPORT_SUBJECTS|streams\.info\(\s*REPORTS_STREAM/.test(stripComments(readFileSync(path, "utf8"))))
      .map((path) => relative(ROOT, path));
    assert.deepEqual(readers, ["src/bus/reports.ts"]);
  });
});
