import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  FANOUT, LEAF_KEYS, MAX_DEPTH, OWN_ALL, bucketsFrom, bucketsOf, deleteIn, emptyBuckets, entriesIn, getIn, hashOf, hasIn, keysIn, packBuckets, setIn, sizeIn,
  unpackBuckets, valuesIn, type Buckets, type Owned, type PackedBuckets,
} from "../../src/projections/buckets.ts";
import { prng } from "../support/history.ts";

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

/** One change to a map. */
type Op = { kind: "set"; key: string; value: number } | { kind: "delete"; key: string };

function randomOps(seed: number, count: number, universe: number): Op[] {
  const random = prng(seed);
  return Array.from({ length: count }, (_, i): Op => {
    const key = `k-${Math.floor(random() * universe)}`;
    return random() < 0.7 ? { kind: "set", key, value: i } : { kind: "delete", key };
  });
}

/** The map after `op`, changing in place what `owned` holds. */
function applyOp(map: Buckets<number>, op: Op, owned: Owned): Buckets<number> {
  return op.kind === "set" ? setIn(map, op.key, op.value, owned) : deleteIn(map, op.key, owned);
}

/** Every array and leaf of the map. */
function objectsOf(map: Buckets<number>): object[] {
  const all: object[] = [map];
  for (const node of map) {
    if (Array.isArray(node)) all.push(...objectsOf(node));
    else if (node !== null) all.push(node);
  }
  return all;
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
    assert.equal(deleteIn(map, "a", new WeakSet()), map, "deleting what is not there changes nothing");
  });

  it("agrees with a Map over random sets and deletes, key by key, and keeps its shape", () => {
    for (const [seed, universe] of [[1, 40], [2, 600], [3, 5000]] as const) {
      let map = emptyBuckets<number>();
      const model = new Map<string, number>();
      const ops = randomOps(seed, universe * 4, universe);
      ops.forEach((op, i) => {
        map = applyOp(map, op, OWN_ALL);
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
      let map = emptyBuckets<number>();
      keys.slice(0, LEAF_KEYS).forEach((key, i) => { map = setIn(map, key, i, OWN_ALL); });
      const slot0 = map[hashOf(keys[0]!) & 63];
      assert.ok(!Array.isArray(slot0) && slot0?.keys.length === LEAF_KEYS, `levels ${levels}: ${LEAF_KEYS} keys fit one leaf`);
      const before = JSON.stringify(map);
      const split = setIn(map, keys[LEAF_KEYS]!, LEAF_KEYS, new WeakSet());
      assert.equal(JSON.stringify(map), before, "a split copies too: the map given is left as it was");
      map = split;
      assertShape(map);
      // They share their slot for `levels` levels: the leaf was split until they part.
      let node: unknown = map;
      let depth = 0;
      for (; Array.isArray(node); depth += 1) node = (node as Buckets<number>)[(hashOf(keys[0]!) >>> (6 * depth)) & 63];
      assert.equal(depth, levels + 1, `levels ${levels}: ${levels + 1} arrays on the way to the first key`);
      keys.forEach((key, i) => assert.equal(getIn(map, key), i, `levels ${levels}: ${key}`));
      // Setting a key the full leaf already holds replaces its value and splits nothing.
      let full = emptyBuckets<number>();
      keys.slice(0, LEAF_KEYS).forEach((key, i) => { full = setIn(full, key, i, OWN_ALL); });
      const whole = JSON.stringify(full);
      full = setIn(full, keys[0]!, 99, OWN_ALL);
      assert.equal(JSON.stringify(full), whole.replace('"values":[0,', '"values":[99,'));
    }
  });

  it("R41: bucketsFrom builds at once the map setIn builds key by key, byte for byte (a replay's applied ids)", () => {
    const cases: string[][] = [
      [],
      Array.from({ length: 5000 }, (_, i) => `cmd-${i}`),
      colliding("deep", 18, LEAF_KEYS + 3).concat(colliding("deeper", 24, 3), ["x", "y"]),
    ];
    for (const keys of cases) {
      let oneByOne = emptyBuckets<number>();
      keys.forEach((key, i) => { oneByOne = setIn(oneByOne, key, i, new WeakSet()); });
      const atOnce = bucketsFrom(keys, keys.map((_, i) => i));
      assert.equal(JSON.stringify(packBuckets(atOnce)), JSON.stringify(packBuckets(oneByOne)), `${keys.length} keys`);
      assert.equal(JSON.stringify(atOnce), JSON.stringify(oneByOne));
      assertShape(atOnce);
    }
  });

  it("R41: the same sets and deletes give the same map, byte for byte, changed in place or copied, in one fold or many, and across a JSON round trip", () => {
    const ops = randomOps(4, 6000, 1500);
    let inPlace = emptyBuckets<number>();
    for (const op of ops) inPlace = applyOp(inPlace, op, OWN_ALL);
    let stepwise = emptyBuckets<number>();
    for (const op of ops) stepwise = applyOp(stepwise, op, new WeakSet()); // a fold per change: every change copies
    let batched = emptyBuckets<number>();
    for (let i = 0; i < ops.length; i += 333) {
      const owned = new WeakSet<object>(); // a fold per batch: its own copies are changed in place
      for (const op of ops.slice(i, i + 333)) batched = applyOp(batched, op, owned);
    }
    let resumed = emptyBuckets<number>();
    for (const op of ops.slice(0, 3000)) resumed = applyOp(resumed, op, OWN_ALL);
    resumed = JSON.parse(JSON.stringify(resumed)) as Buckets<number>;
    for (const op of ops.slice(3000)) resumed = applyOp(resumed, op, OWN_ALL);
    assert.equal(JSON.stringify(stepwise), JSON.stringify(inPlace));
    assert.equal(JSON.stringify(batched), JSON.stringify(inPlace));
    assert.equal(JSON.stringify(resumed), JSON.stringify(inPlace));
  });

  it("a fold leaves the map it was given as it was, copies only the arrays and the leaf on the key's way, and copies each once", () => {
    let map = emptyBuckets<number>();
    for (let i = 0; i < 3000; i += 1) map = setIn(map, `k-${i}`, i, OWN_ALL);
    const before = JSON.stringify(map);
    const given = new Set(objectsOf(map));
    const owned = new WeakSet<object>();
    const next = setIn(map, "k-7", -7, owned);
    assert.equal(JSON.stringify(map), before, "the map given is left as it was");
    assert.equal(getIn(next, "k-7"), -7);
    assert.equal(getIn(map, "k-7"), 7);
    const hash = hashOf("k-7");
    let depth = 0;
    for (let node: unknown = map; Array.isArray(node); depth += 1) node = node[(hash >>> (6 * depth)) & 63];
    const fresh = objectsOf(next).filter((o) => !given.has(o));
    assert.equal(fresh.length, depth + 1, `the ${depth} arrays on the way and the leaf are new, nothing else`);
    assert.ok(fresh.every((o) => owned.has(o)), "and the fold owns them");
    // The same fold changes what it made in place: no further copies on that way.
    const again = deleteIn(setIn(next, "k-7", -8, owned), "k-7", owned);
    assert.equal(again, next, "the root it owns is changed in place");
    assert.equal(objectsOf(again).filter((o) => !given.has(o)).length, depth + 1);
    assert.equal(getIn(again, "k-7"), undefined);
    assert.equal(getIn(map, "k-7"), 7);
  });

  it("R41: a packed map unpacks to the same map, byte for byte: after sets, splits and deletes (arrays left with few keys), keys of any spelling, values of any JSON", () => {
    const maps: Buckets<unknown>[] = [emptyBuckets(), bucketsOf({ "": 0, "é": { a: [1, null] }, "𝄞-node": "x", "a\"b\\c\n": [] })];
    for (const [seed, universe] of [[5, 40], [6, 3000]] as const) {
      let map = emptyBuckets<number>();
      for (const op of randomOps(seed, universe * 4, universe)) map = applyOp(map, op, OWN_ALL);
      maps.push(map);
    }
    // A deep split, then every key but one deleted: arrays whose keys would fit one leaf, which a
    // map rebuilt by setting its entries again would not have.
    let emptied = emptyBuckets<number>();
    const deep = colliding("pack", 12, LEAF_KEYS + 1);
    deep.forEach((key, i) => { emptied = setIn(emptied, key, i, OWN_ALL); });
    deep.slice(1).forEach((key) => { emptied = deleteIn(emptied, key, OWN_ALL); });
    assert.ok(Array.isArray(emptied[hashOf(deep[0]!) & 63]), "the split array outlives its keys");
    maps.push(emptied);
    for (const map of maps) {
      const packed = JSON.parse(JSON.stringify(packBuckets(map))) as PackedBuckets<unknown>;
      assert.equal(JSON.stringify(unpackBuckets(packed)), JSON.stringify(map));
      assert.deepStrictEqual(unpackBuckets(packed), JSON.parse(JSON.stringify(map)), "plain arrays and objects, as a JSON round trip gives");
    }
  });

  it("unpacking throws on a packed map whose shape, keys and values disagree", () => {
    const packed = packBuckets(bucketsOf({ a: 1, bb: 2, ccc: 3 }));
    const broken: PackedBuckets<number>[] = [
      { ...packed, values: packed.values.slice(1) },
      { ...packed, lengths: packed.lengths.slice(1) },
      { ...packed, keys: `${packed.keys}x` },
      { ...packed, lengths: packed.lengths.map((n) => n + 1) },
      { ...packed, shape: packed.shape.slice(1) },
      { ...packed, shape: [...packed.shape.slice(1), "x" as unknown as number] },
    ];
    for (const each of broken) assert.throws(() => unpackBuckets(each), /unpack/);
  });

  it("bucketsOf files a record's keys; keys are read back whatever their spelling", () => {
    const record: Record<string, number> = { b: 2, a: 1, "10": 10, "2": 2, "node-1.internal": 7, "": 0 };
    const map = bucketsOf(record);
    assert.deepEqual(Object.fromEntries(entriesIn(map)), record);
    assert.equal(hasIn(map, "toString"), false, "inherited names are not keys");
    assert.equal(getIn(map, "constructor"), undefined);
  });
});
