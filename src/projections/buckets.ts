/**
 * Bucketed maps: the fold driver's `applied` (state.ts: every command id of the history, one more
 * each commit), kept so that adding one key copies little. The slices are immer-folded Maps
 * (fold.ts); this map is no slice's: only the driver sets it, and no handler sees it.
 *
 * evolve never changes the state it is given: each change copies every object on the way from the
 * state to the changed key. A plain object of N keys costs time in proportion to N to copy, and
 * more than that once V8 has made it a dictionary (a few dozen keys added one by one: about 0.3 µs
 * a key), so one commit about one node of a large mesh cost hundreds of microseconds, most of a
 * fenced append's time. Here a change copies a few arrays of 64 slots (a memory copy each) and one
 * leaf of at most LEAF_KEYS keys, however large the map.
 *
 * Shape: an array of 64 slots (FANOUT), each null, a leaf or another such array, one level down.
 * A leaf is two arrays, its keys and their values at the same places: not an object keyed by them,
 * because every new key of an object (a command id each commit) makes V8 build a new hidden class
 * and intern the key, which cost more than the rest of a commit's fold. A key's slot at depth d is
 * 6 bits of its 32-bit hash (FNV-1a, then mixed), bits 6d..6d+5. A leaf that would take a key past
 * LEAF_KEYS is split into an array of 64 slots one level down (never merged back); at depth
 * MAX_DEPTH - 1 the hash has no bits left and a leaf just grows. The shape depends only on the keys
 * set and deleted, in order, so a replay and a snapshot plus its tail build the same one (R41).
 * Plain JSON data: snapshots hold it as it is.
 *
 * The folds change them by hand, not through immer (a draft's proxy per array and per leaf, and
 * its traps, cost more than the copies themselves). setIn and deleteIn copy the arrays and the leaf
 * on the key's way, unless the fold already owns them (`owned`: what this fold made itself, never
 * seen outside it), which it then changes in place; they
 * return the map's root, a new one when the root was copied. So a fold is pure (the map it was
 * given is left as it was) and a long fold copies each array and leaf once, not once per change.
 * Read with getIn, hasIn, keysIn, valuesIn, entriesIn and sizeIn. A fold from empty builds the map
 * at once from the ids it collected (bucketsFrom).
 */

/** The keys of one bucket, and their values at the same places. */
export type Leaf<V> = { keys: string[]; values: V[] };
/** A bucketed map of string keys to V (see the module comment); the empty one is emptyBuckets(). */
export type Buckets<V> = (Buckets<V> | Leaf<V> | null)[];

/** Slots per array: 6 bits of the hash per level. */
export const FANOUT = 64;
/** Keys a leaf holds before it is split (a lookup compares the key with each of a leaf's keys). */
export const LEAF_KEYS = 16;
/** Levels of arrays: 5 levels use 30 of the hash's 32 bits. */
export const MAX_DEPTH = 5;

/** The 32-bit hash of `key` that files it: FNV-1a of its UTF-16 code units, then murmur3's finalizer so every bit depends on every unit. */
export function hashOf(key: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i += 1) {
    hash ^= key.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return hash >>> 0;
}

/** The slot (0..63) a key of hash `hash` takes in an array at `depth` (0 = the map itself). */
function slotAt(hash: number, depth: number): number {
  return (hash >>> (6 * depth)) & (FANOUT - 1);
}

/** A new empty bucketed map: 64 empty slots. */
export function emptyBuckets<V>(): Buckets<V> {
  return new Array<null>(FANOUT).fill(null);
}

/** The leaf `key` is filed in, or null when its slot is empty. */
function leafOf<V>(map: Buckets<V>, key: string): Leaf<V> | null {
  const hash = hashOf(key);
  let node: Buckets<V> | Leaf<V> | null = map;
  for (let depth = 0; Array.isArray(node); depth += 1) node = (node as Buckets<V>)[slotAt(hash, depth)] ?? null;
  return node;
}

/** The value of `key`, or undefined when the map does not hold it. */
export function getIn<V>(map: Buckets<V>, key: string): V | undefined {
  const leaf = leafOf(map, key);
  if (leaf === null) return undefined;
  const at = leaf.keys.indexOf(key);
  return at < 0 ? undefined : leaf.values[at];
}

/** Whether the map holds `key`. */
export function hasIn<V>(map: Buckets<V>, key: string): boolean {
  const leaf = leafOf(map, key);
  return leaf !== null && leaf.keys.includes(key);
}

/** What a fold may change in place: the arrays and leaves it made itself (a WeakSet, filled by setIn and deleteIn), or OWN_ALL. */
export type Owned = { has(value: object): boolean; add(value: object): unknown };

/** Ownership of everything: to change a map nobody else holds in place (tests). */
export const OWN_ALL: Owned = { has: () => true, add: () => undefined };

/** The array `branch` as the fold may change it: itself when owned, else a copy (now owned). */
function ownedBranch<V>(branch: Buckets<V>, owned: Owned): Buckets<V> {
  if (owned.has(branch)) return branch;
  const copy = branch.slice();
  owned.add(copy);
  return copy;
}

/** The leaf as the fold may change it: itself when owned (its two arrays with it), else a copy (now owned). */
function ownedLeaf<V>(leaf: Leaf<V>, owned: Owned): Leaf<V> {
  if (owned.has(leaf)) return leaf;
  const copy = { keys: leaf.keys.slice(), values: leaf.values.slice() };
  owned.add(copy);
  return copy;
}

/** A new leaf of one key, owned by the fold. */
function newLeaf<V>(key: string, value: V, owned: Owned): Leaf<V> {
  const leaf = { keys: [key], values: [value] };
  owned.add(leaf);
  return leaf;
}

/**
 * `map` with `key` set to `value` (see the module comment: copies what `owned` does not hold,
 * changes the rest in place). A leaf that would hold more than LEAF_KEYS keys is split one level
 * down first. Returns the map's root: `map` itself when owned, else its copy.
 */
export function setIn<V>(map: Buckets<V>, key: string, value: V, owned: Owned): Buckets<V> {
  const hash = hashOf(key);
  const root = ownedBranch(map, owned);
  let branch = root;
  for (let depth = 0; ; ) {
    const slot = slotAt(hash, depth);
    const node = branch[slot] ?? null;
    if (node === null) {
      branch[slot] = newLeaf(key, value, owned);
      return root;
    }
    if (Array.isArray(node)) {
      branch = branch[slot] = ownedBranch(node, owned);
      depth += 1;
      continue;
    }
    const at = node.keys.indexOf(key);
    if (at < 0 && depth + 1 < MAX_DEPTH && node.keys.length >= LEAF_KEYS) {
      const split = emptyBuckets<V>();
      owned.add(split);
      node.keys.forEach((k, i) => {
        const into = slotAt(hashOf(k), depth + 1);
        const leaf = split[into] as Leaf<V> | null;
        if (leaf === null) split[into] = newLeaf(k, node.values[i]!, owned);
        else {
          leaf.keys.push(k);
          leaf.values.push(node.values[i]!);
        }
      });
      branch[slot] = split;
      continue; // the slot holds the split array now: file the key in it
    }
    const leaf = (branch[slot] = ownedLeaf(node, owned));
    if (at < 0) {
      leaf.keys.push(key);
      leaf.values.push(value);
    } else {
      leaf.values[at] = value;
    }
    return root;
  }
}

/**
 * The bucketed map holding `keys[i]` → `values[i]` (distinct keys), built at once: the same map,
 * array for array and key for key, as setIn gives when they are set one by one in that order (a
 * slot holds a leaf while at most LEAF_KEYS keys share it). For a fold from empty, which collects
 * its command ids in a plain Map first: one hash per key, no leaf copied or split on the way.
 */
export function bucketsFrom<V>(keys: readonly string[], values: readonly V[]): Buckets<V> {
  const hashes = keys.map(hashOf);
  const build = (indexes: number[], depth: number): Buckets<V> => {
    const branch = emptyBuckets<V>();
    const groups = new Array<number[] | undefined>(FANOUT);
    for (const i of indexes) (groups[slotAt(hashes[i]!, depth)] ??= []).push(i);
    groups.forEach((group, slot) => {
      if (group === undefined) return;
      branch[slot] = group.length <= LEAF_KEYS || depth + 1 >= MAX_DEPTH
        ? { keys: group.map((i) => keys[i]!), values: group.map((i) => values[i]!) }
        : build(group, depth + 1);
    });
    return branch;
  };
  return build(keys.map((_, i) => i), 0);
}

/**
 * `map` without `key` (copies what `owned` does not hold, as setIn); a leaf left empty empties its
 * slot. Returns the map's root: `map` itself when the key is absent or the root owned.
 */
export function deleteIn<V>(map: Buckets<V>, key: string, owned: Owned): Buckets<V> {
  if (!hasIn(map, key)) return map;
  const hash = hashOf(key);
  const root = ownedBranch(map, owned);
  let branch = root;
  for (let depth = 0; ; depth += 1) {
    const slot = slotAt(hash, depth);
    const node = branch[slot]!;
    if (Array.isArray(node)) {
      branch = branch[slot] = ownedBranch(node, owned);
      continue;
    }
    const leaf = ownedLeaf(node, owned);
    const at = leaf.keys.indexOf(key);
    leaf.keys.splice(at, 1);
    leaf.values.splice(at, 1);
    branch[slot] = leaf.keys.length === 0 ? null : leaf;
    return root;
  }
}

/** Calls `visit` with every key and value of the map, in slot order (fixed by the keys' hashes, not sorted). */
function eachIn<V>(map: Buckets<V>, visit: (key: string, value: V) => void): void {
  for (const node of map) {
    if (node === null || node === undefined) continue;
    if (Array.isArray(node)) eachIn(node, visit);
    else for (let i = 0; i < node.keys.length; i += 1) visit(node.keys[i]!, node.values[i]!);
  }
}

/** Every key of the map, in slot order (not sorted: sort where the order shows). */
export function keysIn<V>(map: Buckets<V>): string[] {
  const keys: string[] = [];
  eachIn(map, (key) => { keys.push(key); });
  return keys;
}

/** Every value of the map, in slot order (not sorted: sort where the order shows). */
export function valuesIn<V>(map: Buckets<V>): V[] {
  const values: V[] = [];
  eachIn(map, (_key, value) => { values.push(value); });
  return values;
}

/** Every key and value of the map, in slot order (not sorted: sort where the order shows). */
export function entriesIn<V>(map: Buckets<V>): [string, V][] {
  const entries: [string, V][] = [];
  eachIn(map, (key, value) => { entries.push([key, value]); });
  return entries;
}

/** How many keys the map holds (a walk of the map: O(keys)). */
export function sizeIn<V>(map: Buckets<V>): number {
  let size = 0;
  eachIn(map, () => { size += 1; });
  return size;
}

/** A bucketed map holding the keys and values of `record` (fixtures, tests). */
export function bucketsOf<V>(record: Readonly<Record<string, V>>): Buckets<V> {
  return bucketsFrom(Object.keys(record), Object.values(record));
}

/**
 * A bucketed map as a snapshot holds it (R46 names the shape version: snapshots.ts): its arrays
 * with each leaf written as its key count (`shape`), every key run together in slot order
 * (`keys`) with their lengths in UTF-16 code units (`lengths`), and the values in the same order.
 * Plain JSON data, and lossless: the arrays are kept as they are, empty slots and splits whose
 * keys were deleted included, so the map unpacks to the same one, byte for byte (R41), which
 * setting its entries again would not give. Read back far faster than the map's own JSON: one
 * string instead of a string and a leaf object per key, and no leaf objects to parse (most of a
 * large state's start was JSON.parse-ing them).
 */
export type PackedBuckets<V> = { shape: PackedShape; keys: string; lengths: number[]; values: V[] };
/** A bucketed map's arrays with each leaf replaced by its key count (see PackedBuckets). */
export type PackedShape = (PackedShape | number | null)[];

/** `map` packed for a snapshot (see PackedBuckets). Pure: `map` is left as it was. */
export function packBuckets<V>(map: Buckets<V>): PackedBuckets<V> {
  // Arrays of their final length: grown push by push, a million keys' arrays were reallocated
  // again and again beside a large state, and the allocations set off marking of the whole heap
  // (a save took three times as long).
  const size = sizeIn(map);
  const keys = new Array<string>(size);
  const lengths = new Array<number>(size);
  const values = new Array<V>(size);
  let entry = 0;
  const shapeOf = (branch: Buckets<V>): PackedShape => {
    const shape: PackedShape = new Array<null>(branch.length);
    for (let slot = 0; slot < branch.length; slot += 1) {
      const node = branch[slot] ?? null;
      if (node === null) shape[slot] = null;
      else if (Array.isArray(node)) shape[slot] = shapeOf(node);
      else {
        for (let i = 0; i < node.keys.length; i += 1, entry += 1) {
          keys[entry] = node.keys[i]!;
          lengths[entry] = node.keys[i]!.length;
          values[entry] = node.values[i]!;
        }
        shape[slot] = node.keys.length;
      }
    }
    return shape;
  };
  const shape = shapeOf(map);
  return { shape, keys: keys.join(""), lengths, values };
}

/**
 * The bucketed map `packed` holds (see PackedBuckets): plain arrays and objects, as a JSON round
 * trip of the map would give. Throws an Error ("cannot unpack ...") when its shape, keys, lengths
 * and values disagree (a damaged snapshot: the caller ignores it, R46).
 */
export function unpackBuckets<V>(packed: PackedBuckets<V>): Buckets<V> {
  const { shape, keys, lengths, values } = packed;
  if (!Array.isArray(shape) || typeof keys !== "string" || !Array.isArray(lengths) || !Array.isArray(values) || lengths.length !== values.length) {
    throw new Error("cannot unpack a bucketed map: its parts are missing or their counts differ");
  }
  let entry = 0; // the next key's index in lengths and values
  let at = 0; // the next key's first code unit in keys
  const branchOf = (packedBranch: PackedShape): Buckets<V> => {
    if (packedBranch.length !== FANOUT) throw new Error(`cannot unpack a bucketed map: an array of ${packedBranch.length} slots`);
    const branch: Buckets<V> = new Array<null>(FANOUT);
    for (let slot = 0; slot < FANOUT; slot += 1) {
      const node = packedBranch[slot];
      if (node === null) branch[slot] = null;
      else if (Array.isArray(node)) branch[slot] = branchOf(node);
      else if (typeof node === "number" && Number.isInteger(node) && node >= 0 && entry + node <= lengths.length) {
        const leafKeys = new Array<string>(node);
        for (let i = 0; i < node; i += 1) {
          const length = lengths[entry + i]!;
          leafKeys[i] = keys.slice(at, at + length);
          at += length;
        }
        branch[slot] = { keys: leafKeys, values: values.slice(entry, entry + node) };
        entry += node;
      } else throw new Error(`cannot unpack a bucketed map: a slot holds ${JSON.stringify(node)}`);
    }
    return branch;
  };
  const map = branchOf(shape);
  if (entry !== values.length || at !== keys.length) throw new Error("cannot unpack a bucketed map: its shape does not hold every key");
  return map;
}
