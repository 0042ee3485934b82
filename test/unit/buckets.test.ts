import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Immer } from "immer";
import {
  FANOUT, LEAF_KEYS, MAX_DEPTH, bucketsOf, deleteIn, emptyBuckets, entriesIn, getIn, hashOf, hasIn, keysIn, setIn, sizeIn, valuesIn,
  type Buckets,
} from "../../src/projections/buckets.ts";

const immer = new Immer({ autoFreeze: false });

/** mulberry32, for reproducible operation sequences. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The first `count` keys `node-<i>` whose hash has the low `bits` bits of `hashOf(like)`: they share a slot for bits/6 levels. */
function colliding(like: string, bits: number, count: number): string[] {
  const mask = bits >= 32 ? 0xffffffff : (1 << bits) - 1;
  const want = hashOf(like) & mask;
  const keys: string[] = [];
  for (let i = 0; keys.length < count; i += 1) if ((hashOf(`node-${i}`) & mask) === want) keys.push(`node-${i}`);
  return keys;
}

/**
 * Checks the map's shape: every array has FANOUT slots, no leaf is empty, every key is in the slot
 * its hash names at each depth, and a leaf holds at most LEAF_KEYS keys above the last depth.
 */
function assertShape<V>(map: Buckets<V>, depth = 0, path: number[] = []): void {
  assert.equal(map.length, FANOUT, `array at ${path.join("/")} has ${FANOUT} slots`);
  map.forEach((node, slot) => {
    if (node === null) return;
    if (Array.isArray(node)) {
      assert.ok(depth + 1 < MAX_DEPTH, "no array below the last depth");
      assertShape(node, depth + 1, [...path, slot]);
      return;
    }
    const { keys, values } = node;
    assert.equal(values.length, keys.length, "a value for each key");
    assert.equal(new Set(keys).size, keys.length, "each key once");
    assert.ok(keys.length > 0, `leaf at ${[...path, slot].join("/")} is not empty`);
    if (depth + 1 < MAX_DEPTH) assert.ok(keys.length <= LEAF_KEYS, `leaf at ${[...path, slot].join("/")} holds ${keys.length} keys`);
    for (const key of keys) {
      const at = [...path, slot];
      at.forEach((s, d) => assert.equal((hashOf(key) >>> (6 * d)) & (FANOUT - 1), s, `${key} filed at ${at.join("/")}`));
    }
  });
}

/** Applies one operation to a plain map in place, to a draft through immer, and to the Map model. */
type Op = { kind: "set"; key: string; value: number } | { kind: "delete"; key: string };

function randomOps(seed: number, count: number, universe: number): Op[] {
  const random = prng(seed);
  return Array.from({ length: count }, (_, i): Op => {
    const key = `k-${Math.floor(random() * universe)}`;
    return random() < 0.7 ? { kind: "set", key, value: i } : { kind: "delete", key };
  });
}

function applyOp(map: Buckets<number>, op: Op): void {
  if (op.kind === "set") setIn(map, op.key, op.value);
  else deleteIn(map, op.key);
}

function assertSameAsModel(map: Buckets<number>, model: Map<string, number>, where: string): void {
  assert.equal(sizeIn(map), model.size, `${where}: size`);
  assert.deepEqual(new Map(entriesIn(map)), model, `${where}: entries`);
  assert.deepEqual([...keysIn(map)].sort(), [...model.keys()].sort(), `${where}: keys`);
  assert.deepEqual([...valuesIn(map)].sort((a, b) => a - b), [...model.values()].sort((a, b) => a - b), `${where}: values`);
}

describe("bucketed maps (projections/buckets.ts)", () => {
  it("an empty map holds nothing and reads the same after a JSON round trip", () => {
    const map = emptyBuckets<number>();
    assert.equal(sizeIn(map), 0);
    assert.equal(getIn(map, "a"), undefined);
    assert.equal(hasIn(map, "a"), false);
    assert.deepEqual(JSON.parse(JSON.stringify(map)), map);
    deleteIn(map, "a"); // deleting what is not there changes nothing
    assert.deepEqual(map, emptyBuckets());
  });

  it("agrees with a Map over random sets and deletes, key by key, and keeps its shape", () => {
    for (const [seed, universe] of [[1, 40], [2, 600], [3, 5000]] as const) {
      const map = emptyBuckets<number>();
      const model = new Map<string, number>();
      const ops = randomOps(seed, universe * 4, universe);
      ops.forEach((op, i) => {
        applyOp(map, op);
        if (op.kind === "set") model.set(op.key, op.value);
        else model.delete(op.key);
        assert.equal(getIn(map, op.key), model.get(op.key), `seed ${seed}, op ${i}`);
        assert.equal(hasIn(map, op.key), model.has(op.key), `seed ${seed}, op ${i}`);
      });
      assertSameAsModel(map, model, `seed ${seed}`);
      for (let k = 0; k < universe; k += 1) assert.equal(getIn(map, `k-${k}`), model.get(`k-${k}`));
      assertShape(map);
    }
  });

  it("a leaf splits one level down when a key would take it past LEAF_KEYS, as deep as the keys share their slots", () => {
    // Keys sharing their slot at depths 0 .. 2 (18 bits; finding 17 keys that share 24 bits takes
    // a minute of hashing): one key past LEAF_KEYS splits their leaf until they part.
    for (const levels of [1, 2, 3]) {
      const keys = colliding("seed", 6 * levels, LEAF_KEYS + 1);
      const map = emptyBuckets<number>();
      keys.slice(0, LEAF_KEYS).forEach((key, i) => setIn(map, key, i));
      const slot0 = map[hashOf(keys[0]!) & 63];
      assert.ok(!Array.isArray(slot0) && slot0?.keys.length === LEAF_KEYS, `levels ${levels}: ${LEAF_KEYS} keys fit one leaf`);
      setIn(map, keys[LEAF_KEYS]!, LEAF_KEYS);
      assertShape(map);
      // They share their slot for `levels` levels: the leaf was split until they part.
      let node: unknown = map;
      let depth = 0;
      for (; Array.isArray(node); depth += 1) node = (node as Buckets<number>)[(hashOf(keys[0]!) >>> (6 * depth)) & 63];
      assert.equal(depth, levels + 1, `levels ${levels}: ${levels + 1} arrays on the way to the first key`);
      keys.forEach((key, i) => assert.equal(getIn(map, key), i, `levels ${levels}: ${key}`));
      // Setting a key the full leaf already holds replaces its value and splits nothing.
      const full = emptyBuckets<number>();
      keys.slice(0, LEAF_KEYS).forEach((key, i) => setIn(full, key, i));
      const whole = JSON.stringify(full);
      setIn(full, keys[0]!, 99);
      assert.equal(JSON.stringify(full), whole.replace('"values":[0,', '"values":[99,'));
    }
  });

  it("R41: the same sets and deletes give the same map, byte for byte, on a plain map, through immer, batched or not, and across a JSON round trip", () => {
    const ops = randomOps(4, 6000, 1500);
    const plain = emptyBuckets<number>();
    for (const op of ops) applyOp(plain, op);
    let stepwise = emptyBuckets<number>();
    for (const op of ops) stepwise = immer.produce(stepwise, (draft) => { applyOp(draft as Buckets<number>, op); });
    let batched = emptyBuckets<number>();
    for (let i = 0; i < ops.length; i += 333) batched = immer.produce(batched, (draft) => { for (const op of ops.slice(i, i + 333)) applyOp(draft as Buckets<number>, op); });
    let resumed = emptyBuckets<number>();
    for (const op of ops.slice(0, 3000)) applyOp(resumed, op);
    resumed = JSON.parse(JSON.stringify(resumed)) as Buckets<number>;
    for (const op of ops.slice(3000)) applyOp(resumed, op);
    assert.equal(JSON.stringify(stepwise), JSON.stringify(plain));
    assert.equal(JSON.stringify(batched), JSON.stringify(plain));
    assert.equal(JSON.stringify(resumed), JSON.stringify(plain));
  });

  it("a change through immer leaves the map given as it was and copies only the arrays and the leaf on the key's way", () => {
    const map = emptyBuckets<number>();
    for (let i = 0; i < 3000; i += 1) setIn(map, `k-${i}`, i);
    const before = JSON.stringify(map);
    const next = immer.produce(map, (draft) => { setIn(draft as Buckets<number>, "k-7", -7); });
    assert.equal(JSON.stringify(map), before, "the map given is left as it was");
    assert.equal(getIn(next, "k-7"), -7);
    assert.equal(getIn(map, "k-7"), 7);
    // Walk both: every object off the key's path is shared.
    let copied = 0;
    const walk = (a: unknown, b: unknown): void => {
      if (a === b) return;
      copied += 1;
      if (Array.isArray(a) && Array.isArray(b)) a.forEach((x, i) => walk(x, b[i]));
    };
    walk(next, map);
    const hash = hashOf("k-7");
    let depth = 0;
    for (let node: unknown = map; Array.isArray(node); depth += 1) node = node[(hash >>> (6 * depth)) & 63];
    assert.equal(copied, depth + 1, `the ${depth} arrays on the way and the leaf are new, nothing else`);
  });

  it("a split inside a draft keeps every value, the draft's own changes included", () => {
    const keys = colliding("split", 6, LEAF_KEYS + 1);
    const map = emptyBuckets<{ n: number }>();
    keys.slice(0, LEAF_KEYS).forEach((key, i) => setIn(map, key, { n: i }));
    const next = immer.produce(map, (draft) => {
      const d = draft as Buckets<{ n: number }>;
      getIn(d, keys[0]!)!.n = 100; // a change to a value, through the draft, before the split
      setIn(d, keys[LEAF_KEYS]!, { n: LEAF_KEYS });
    });
    assertShape(next);
    assert.equal(getIn(next, keys[0]!)?.n, 100);
    keys.slice(1).forEach((key, i) => assert.equal(getIn(next, key)?.n, i + 1));
    assert.equal(getIn(map, keys[0]!)?.n, 0, "the map given is left as it was");
    assert.equal(sizeIn(map), LEAF_KEYS);
  });

  it("bucketsOf files a record's keys; keys are read back whatever their spelling", () => {
    const record: Record<string, number> = { b: 2, a: 1, "10": 10, "2": 2, "node-1.internal": 7, "": 0 };
    const map = bucketsOf(record);
    assert.deepEqual(Object.fromEntries(entriesIn(map)), record);
    assert.equal(hasIn(map, "toString"), false, "inherited names are not keys");
    assert.equal(getIn(map, "constructor"), undefined);
  });
});
