/**
 * R59: list replies page (src/commands/paging.ts, pure): within a byte budget and a limit, each item
 * once and in order when followed, tokens that survive catalogue changes and refuse foreign input.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { continueToken, pageOf, readContinueToken, type PageSpec } from "../../../src/commands/paging.ts";
import type { PageRequest } from "../../../src/contracts/verbs.ts";

type Item = { name: string; blob: string };
const SPEC: PageSpec = { field: "items", key: (item) => (item as Item).name };

function items(n: number, size = 10): Item[] {
  return Array.from({ length: n }, (_, i) => ({ name: `n${String(i).padStart(4, "0")}`, blob: "x".repeat(size + (i % 7) * 13) }));
}

/** Follows every page of `list` (limit per page, budget per reply) and returns the pages. */
function follow(list: Record<string, unknown>, budget: number, limit?: number, spec: PageSpec = SPEC): Array<Record<string, unknown>> {
  const pages: Array<Record<string, unknown>> = [];
  let token: string | undefined;
  do {
    const request: PageRequest = { ...(limit === undefined ? {} : { limit }), ...(token === undefined ? {} : { continue: token }) };
    const page = pageOf("things", spec, list, request, budget);
    assert.ok(page.ok);
    pages.push(page.value);
    token = page.value.continue as string | undefined;
    assert.ok(pages.length < 10_000);
  } while (token !== undefined);
  return pages;
}

describe("R59: list pages", () => {
  it("R59: followed pages hold every item once, in order, each reply within the budget (sizes x budgets x limits)", () => {
    for (const n of [0, 1, 2, 17, 300]) {
      for (const size of [5, 200]) {
        for (const budget of [1024, 4096, 65_536]) {
          for (const limit of [undefined, 1, 3, 50]) {
            const list = { items: items(n, size), other: "kept" };
            const pages = follow(list, budget, limit);
            const seen = pages.flatMap((p) => p.items as Item[]);
            assert.deepEqual(seen, list.items, `n=${n} size=${size} budget=${budget} limit=${limit}`);
            for (const p of pages) {
              assert.ok(Buffer.byteLength(JSON.stringify({ ok: true, asOf: 123456, ...p })) <= budget, `a page of n=${n} size=${size} fits ${budget}`);
              assert.equal(p.other, "kept");
              if (limit !== undefined) assert.ok((p.items as Item[]).length <= limit);
            }
            assert.equal(pages.at(-1)!.continue, undefined);
          }
        }
      }
    }
  });

  it("R59: an object list (where's placed) pages by sorted key and merges back whole", () => {
    const placed = Object.fromEntries(Array.from({ length: 120 }, (_, i) => [`node-${String(119 - i).padStart(3, "0")}`, `10.0.0.${i}`]));
    const pages = follow({ placed, hub: "node-001" }, 1024, undefined, { field: "placed" });
    assert.ok(pages.length > 1);
    const keys = pages.flatMap((p) => Object.keys(p.placed as object));
    assert.deepEqual(keys, Object.keys(placed).sort());
    assert.deepEqual(Object.assign({}, ...pages.map((p) => p.placed)), placed);
  });

  it("R59: a token stays valid across changes: the next page starts after its key, whether that item is still there or not", () => {
    const list = { items: items(10) };
    const first = pageOf("things", SPEC, list, { limit: 3 }, 1 << 20);
    assert.ok(first.ok);
    const token = first.value.continue as string;
    const changed = { items: [{ name: "a-new-first", blob: "" }, ...list.items.filter((i) => i.name !== "n0002"), { name: "n0002b", blob: "" }].sort((a, b) => (a.name < b.name ? -1 : 1)) };
    const next = pageOf("things", SPEC, changed, { limit: 3, continue: token }, 1 << 20);
    assert.ok(next.ok);
    assert.deepEqual((next.value.items as Item[]).map((i) => i.name), ["n0002b", "n0003", "n0004"]);
    // Past the end: an empty last page, no token.
    const end = pageOf("things", SPEC, { items: [] }, { continue: token }, 1 << 20);
    assert.ok(end.ok);
    assert.deepEqual(end.value.items, []);
    assert.equal(end.value.continue, undefined);
  });

  it("R59: a token of another verb, or not a token, is refused invalid-continue on field continue", () => {
    for (const bad of [continueToken("nodes", "x"), "not-a-token", Buffer.from("{}").toString("base64url"), Buffer.from(JSON.stringify({ v: 2, verb: "things", after: "x" })).toString("base64url")]) {
      const read = readContinueToken("things", bad);
      assert.ok(!read.ok);
      assert.equal(read.refusal.code, "invalid-continue");
      assert.equal(read.refusal.field, "continue");
      const page = pageOf("things", SPEC, { items: items(3) }, { continue: bad }, 1 << 20);
      assert.ok(!page.ok);
      assert.equal(page.refusal.code, "invalid-continue");
    }
  });

  it("R59: a page always moves on: an item larger than the budget comes alone", () => {
    const list = { items: [{ name: "a", blob: "x".repeat(5000) }, { name: "b", blob: "" }] };
    const pages = follow(list, 1024);
    assert.deepEqual(pages.map((p) => (p.items as Item[]).map((i) => i.name)), [["a"], ["b"]]);
  });
});
