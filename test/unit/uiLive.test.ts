import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { startUi, type MeshReader, type Overview } from "../../src/ui/server.ts";
import { pushesShown } from "../../src/ui/pushes.ts";
import type { PushView } from "../../src/contracts/verbs.ts";

/** A promise and the functions that settle it. */
function deferred<T>(): { promise: Promise<T>; resolve(value: T): void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => { resolve = r; });
  return { promise, resolve };
}

/** Polls `check` until it holds (no timing asserted: only that it comes). */
async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 500; i += 1) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.fail("the condition never held");
}

const node = (name: string, report: boolean): Overview["nodes"][number] => ({
  name, modules: [], lastSent: { digest: "d1", at: "t1" },
  lastReport: report ? { digest: "d1", outcome: "applied", at: "t2" } : null,
});

/** A reader whose reads are settled by the test: `reads` holds each read's early hook and its end. */
function heldReader(): { reader: MeshReader; reads: Array<{ early?: (o: Overview) => void; end: ReturnType<typeof deferred<Overview>> }> } {
  const reads: Array<{ early?: (o: Overview) => void; end: ReturnType<typeof deferred<Overview>> }> = [];
  const reader: MeshReader = {
    overview(early) { const end = deferred<Overview>(); reads.push({ ...(early ? { early } : {}), end }); return end.promise; },
    history: async () => ({}), explain: async () => ({}),
  };
  return { reader, reads };
}

describe("mesh ui's live overview (issue 30: usable at 10,000 nodes)", () => {
  it("serves the lists before the reports come, then the whole overview as a change", async () => {
    const { reader, reads } = heldReader();
    const ui = await startUi({ reader, host: "127.0.0.1", port: 0, secrets: [], watch: () => () => undefined });
    try {
      const get = async () => (await (await fetch(`${ui.url.split("?")[0]}api/overview?token=${ui.token}`)).json()) as { version: number; reportsPending: boolean; nodes: { items: Array<{ lastReport: unknown }> } };
      await until(() => reads.length === 1);
      reads[0]!.early!({ nodes: [node("alpha", false)], modules: [], seats: [], pushes: [], reportsPending: true });
      const first = await get();
      assert.equal(first.reportsPending, true);
      assert.equal(first.version, 0);
      reads[0]!.end.resolve({ nodes: [node("alpha", true)], modules: [], seats: [], pushes: [] });
      await until(async () => (await get()).version === 1);
      const whole = await get();
      assert.equal(whole.reportsPending, false);
      assert.notEqual(whole.nodes.items[0]!.lastReport, null);
    } finally {
      await ui.stop();
    }
  });

  it("changes heard during a read ask for one more read after it, not one each", async () => {
    const { reader, reads } = heldReader();
    let changed = (): void => undefined;
    const ui = await startUi({ reader, host: "127.0.0.1", port: 0, secrets: [], watch: (c) => { changed = c; return () => undefined; } });
    try {
      await until(() => reads.length === 1);
      // Heard during the first read: one read after it.
      for (let i = 0; i < 5; i += 1) changed();
      reads[0]!.end.resolve({ nodes: [], modules: [], seats: [], pushes: [] });
      await until(() => reads.length === 2);
      for (let i = 0; i < 20; i += 1) { changed(); await new Promise((r) => setTimeout(r, 20)); }
      assert.equal(reads.length, 2, "no second read while one runs");
      reads[1]!.end.resolve({ nodes: [], modules: [], seats: [], pushes: [] });
      await until(() => reads.length === 3);
      reads[2]!.end.resolve({ nodes: [], modules: [], seats: [], pushes: [] });
    } finally {
      await ui.stop();
    }
  });
});

describe("mesh ui's last pushes: each node's outcome from its last report", () => {
  const push = (id: string, at: string, nodes: Array<[string, string]>, sent = nodes.length): PushView => ({
    id, at, actor: "controller-mesh-controller", commandIds: [`${id}-sent-0-0`], sequences: [1], recordsSequence: 1, sent, nodes: nodes.map(([n, digest]) => ({ node: n, digest })), provisions: 0,
  });

  it("applied, failed, waiting, sent again, removed; counted over every node the push sent", () => {
    const nodes = [
      { name: "a", lastSent: { digest: "da", at: "t1" }, lastReport: { digest: "da", outcome: "applied", at: "t3" } },
      { name: "b", lastSent: { digest: "db", at: "t1" }, lastReport: { digest: "db", outcome: "failed", at: "t3", error: "disk full" } },
      { name: "c", lastSent: { digest: "dc", at: "t1" }, lastReport: null },
      { name: "d", lastSent: { digest: "dd2", at: "t2" }, lastReport: null },
      // Not listed by name (beyond the shown nodes): counted by what it was last sent.
      { name: "f", lastSent: { digest: "df", at: "t1" }, lastReport: { digest: "df", outcome: "applied", at: "t3" } },
    ];
    const [shown] = pushesShown([push("p1", "t1", [["a", "da"], ["b", "db"], ["c", "dc"], ["d", "dd"], ["e", "de"]], 6)], nodes);
    assert.deepEqual(shown!.outcomes.map((o) => [o.node, o.outcome]), [["a", "applied"], ["b", "failed"], ["c", "waiting"], ["d", "sent-again"], ["e", "removed"]]);
    assert.equal(shown!.outcomes[1]!.error, "disk full");
    assert.deepEqual(shown!.counts, { applied: 2, failed: 1, waiting: 1, "sent-again": 1, removed: 1 });
  });
});
