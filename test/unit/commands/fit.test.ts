import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { REPLY_ENVELOPE_BYTES, fitReply, type Omitted } from "../../../src/commands/fit.ts";

const bytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value));

describe("fitReply", () => {
  it("R59: a reply that fits is returned as it is, with no omitted", () => {
    const reply = { module: "web", nodes: ["a", "b", "c"] };
    assert.equal(fitReply(reply, [{ field: "nodes", see: "`mesh modules`" }], 4096), reply);
  });

  it("R59: past the budget, lists are cut from the end in the order given, only as far as needed; omitted counts what each lost", () => {
    const reply = { note: "n", first: Array.from({ length: 100 }, (_, i) => `first-${i}`), second: Array.from({ length: 100 }, (_, i) => `second-${i}`) };
    for (const budget of [REPLY_ENVELOPE_BYTES + 200, 1024, 2048, 3000, 4096]) {
      const fitted = fitReply(reply, [{ field: "first", see: "a" }, { field: "second", see: "b" }], budget);
      assert.ok(bytes(fitted) <= budget - REPLY_ENVELOPE_BYTES, `fits ${budget}`);
      const omitted = (fitted.omitted ?? {}) as Record<string, Omitted>;
      const first = fitted.first as string[];
      const second = fitted.second as string[];
      assert.deepEqual(first, reply.first.slice(0, first.length), "a prefix, in order");
      assert.deepEqual(second, reply.second.slice(0, second.length));
      assert.equal(first.length + (omitted.first?.count ?? 0), 100);
      assert.equal(second.length + (omitted.second?.count ?? 0), 100);
      if (omitted.second) assert.equal(first.length, 0, "the second list is cut only once the first is empty");
      assert.equal(fitted.note, "n", "other fields untouched");
    }
  });

  it("R59: items `first` accepts are kept ahead of the others when a list is cut", () => {
    const nodes = Array.from({ length: 200 }, (_, i) => ({ node: `n-${String(i).padStart(3, "0")}`, outcome: i % 50 === 7 ? "failed" : "sent" }));
    const fitted = fitReply({ nodes }, [{ field: "nodes", see: "s", first: (n) => (n as { outcome: string }).outcome === "failed" }], 2048);
    const kept = fitted.nodes as typeof nodes;
    assert.ok(kept.length < nodes.length);
    assert.deepEqual(kept.slice(0, 4).map((n) => n.node), ["n-007", "n-057", "n-107", "n-157"]);
    assert.ok(kept.slice(4).every((n) => n.outcome === "sent"));
  });
});
