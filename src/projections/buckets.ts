/**
 * Buckets for the state's maps that grow with the mesh or the history (`applied`, `sent`): a map
 * of N keys kept as buckets chosen by the key's FNV-1a hash, so that recording one key copies a
 * 64-key map and one bucket (evolve never changes the state it is given: it copies each map it
 * changes) instead of all N keys. Copying a plain object of thousands of keys costs milliseconds.
 */

/** `x0`..`x63`, made once: a replay files every commit and need not build the strings each time. */
const BUCKETS = Array.from({ length: 64 }, (_, i) => `x${i}`);

/** The 32-bit FNV-1a hash of `key`'s UTF-16 code units. */
function fnv1a(key: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i += 1) {
    hash ^= key.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash;
}

/** The two bucket names (`x0`..`x63` each) `key` is filed under in a two-level bucketed map. */
export function bucketPair(key: string): [string, string] {
  const hash = fnv1a(key);
  return [BUCKETS[(hash >>> 6) & 63]!, BUCKETS[hash & 63]!];
}

/** The bucket name (`x0`..`x63`) `key` is filed under in a one-level bucketed map. */
export function bucketOf(key: string): string {
  return BUCKETS[fnv1a(key) & 63]!;
}

/**
 * An empty bucket for a map that grows by keys no other object has (command ids, node names): a
 * plain object, kept by V8 as a hash table from the start. A `{}` filled by such keys gets a new
 * hidden class for each of its first keys, one per commit in a replay: most of the fold's time.
 */
export function newBucket<T>(): Record<string, T> {
  const bucket = Object.create(null) as Record<string, T>;
  Object.setPrototypeOf(bucket, Object.prototype);
  return bucket;
}
