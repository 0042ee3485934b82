import { immerable } from "immer";

/**
 * A Map of string keys split over SHARDS plain Maps by a hash of the key, for the slices that grow
 * with the mesh (nodes, credentials, sent, ...). immer copies a drafted Map whole on its first
 * change, and V8 copies about a million entries a second: a commit that touched a Map of 10,000
 * nodes paid about 9 ms for it. Drafted, a ShardedMap copies its array of shards and the one shard
 * a key is in. It reads and writes like a Map (the slices' handlers and readers do not know it);
 * iteration goes shard by shard, each in insertion order, so two folds of the same commits iterate
 * alike and a snapshot unpacks to the same order (R41).
 */
export class ShardedMap<V> implements ReadonlyMap<string, V> {
  [immerable] = true;
  readonly shards: Map<string, V>[];

  constructor(entries?: Iterable<readonly [string, V]>) {
    this.shards = Array.from({ length: SHARDS }, () => new Map<string, V>());
    if (entries !== undefined) for (const [key, value] of entries) this.set(key, value);
  }

  get size(): number {
    let size = 0;
    for (const shard of this.shards) size += shard.size;
    return size;
  }
  get(key: string): V | undefined {
    return this.shards[shardOf(key)]!.get(key);
  }
  has(key: string): boolean {
    return this.shards[shardOf(key)]!.has(key);
  }
  set(key: string, value: V): this {
    this.shards[shardOf(key)]!.set(key, value);
    return this;
  }
  delete(key: string): boolean {
    return this.shards[shardOf(key)]!.delete(key);
  }
  forEach(visit: (value: V, key: string, map: ReadonlyMap<string, V>) => void): void {
    for (const shard of this.shards) shard.forEach((value, key) => visit(value, key, this));
  }
  *entries(): MapIterator<[string, V]> {
    for (const shard of this.shards) yield* shard;
  }
  *keys(): MapIterator<string> {
    for (const shard of this.shards) yield* shard.keys();
  }
  *values(): MapIterator<V> {
    for (const shard of this.shards) yield* shard.values();
  }
  [Symbol.iterator](): MapIterator<[string, V]> {
    return this.entries();
  }
}

/** Shards per map: at 10,000 keys a change copies about 160 entries. */
export const SHARDS = 64;

/** The shard of `key`: FNV-1a of its UTF-16 code units, low 6 bits. */
export function shardOf(key: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i += 1) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
  return (hash ^ (hash >>> 15)) & (SHARDS - 1);
}
