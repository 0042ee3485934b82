import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { enableMapSet, isDraft, produce } from "immer";
import { SHARDS, ShardedMap, shardOf } from "../../src/projections/shardedMap.ts";
import { forEachPlain } from "../../src/projections/slice.ts";

enableMapSet();

/** mulberry32: a small seedable PRNG in [0, 1). */
function prng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe("ShardedMap (projections/shardedMap.ts)", () => {
  it("R41: answers as a Map does over random sets and deletes, and iterates alike when built alike", () => {
    for (const seed of [1, 2, 3]) {
      const random = prng(seed);
      const map = new Map<string, number>();
      const sharded = new ShardedMap<number>();
      const twin = new ShardedMap<number>();
      for (let i = 0; i < 5000; i += 1) {
        const key = `node-${Math.floor(random() * 700)}`;
        if (random() < 0.3) {
          assert.equal(sharded.delete(key), map.delete(key));
          twin.delete(key);
        } else {
          sharded.set(key, i);
          twin.set(key, i);
          map.set(key, i);
        }
        assert.equal(sharded.get(key), map.get(key));
        assert.equal(sharded.has(key), map.has(key));
      }
      assert.equal(sharded.size, map.size);
      assert.deepEqual(new Map(sharded), map, "the same entries");
      assert.deepEqual([...sharded.keys()].sort(), [...map.keys()].sort());
      assert.deepEqual([...sharded.values()].sort(), [...map.values()].sort());
      assert.deepEqual([...sharded], [...twin], "two maps built by the same calls iterate in the same order (R41)");
      const visited: [string, number][] = [];
      sharded.forEach((value, key) => visited.push([key, value]));
      assert.deepEqual(visited, [...sharded.entries()]);
    }
  });

  it("spreads keys over every shard", () => {
    const used = new Set(Array.from({ length: 2000 }, (_, i) => shardOf(`node-${i}`)));
    assert.equal(used.size, SHARDS);
  });

  it("drafted by immer, a change copies the one shard its key is in and leaves the original as it was", () => {
    const base = { nodes: new ShardedMap<{ n: number }>(Array.from({ length: 1000 }, (_, i) => [`node-${i}`, { n: i }] as const)) };
    const next = produce(base, (draft) => {
      draft.nodes.set("node-7", { n: -7 });
    });
    assert.ok(next.nodes instanceof ShardedMap);
    assert.equal(next.nodes.get("node-7")?.n, -7);
    assert.equal(base.nodes.get("node-7")?.n, 7, "the original is unchanged");
    const changed = next.nodes.shards.filter((shard, i) => shard !== base.nodes.shards[i]);
    assert.equal(changed.length, 1, "one shard copied");
    assert.equal(next.nodes.size, 1000);
  });

  it("forEachPlain reads a draft's current entries as plain values, and may set what it visits", () => {
    const base = { nodes: new ShardedMap<{ n: number }>(Array.from({ length: 100 }, (_, i) => [`node-${i}`, { n: i }] as const)) };
    const next = produce(base, (draft) => {
      draft.nodes.set("node-new", { n: 1000 });
      draft.nodes.delete("node-0");
      forEachPlain(draft.nodes as unknown as Map<string, { n: number }>, (key, value) => {
        assert.equal(isDraft(value), false, `${key} is plain`);
        if (value.n % 2 === 1) draft.nodes.set(key, { n: value.n + 1 });
      });
    });
    assert.equal(next.nodes.get("node-new")?.n, 1000);
    assert.equal(next.nodes.has("node-0"), false);
    assert.equal(next.nodes.get("node-3")?.n, 4);
    assert.equal(base.nodes.get("node-3")?.n, 3);
  });
});
