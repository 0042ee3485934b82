/**
 * Canonical JSON: object keys sorted at every depth, no spaces, `undefined` members dropped, so
 * equal values give equal bytes. Digests are taken over this text.
 *
 * Composition is pure and cannot import node:crypto, so the hash itself arrives as a parameter:
 * `Digest` is a function from text to a lowercase hex digest (the shell passes sha256, e.g.
 * `(t) => createHash("sha256").update(t).digest("hex")`; DeclarationSent requires 64 hex chars).
 */
export type Digest = (text: string) => string;

/**
 * A string JSON writes as itself between quotes: nothing to escape (no quote, backslash, control
 * character or surrogate). Most names, subjects and digests are; they skip JSON.stringify.
 */
// eslint-disable-next-line no-control-regex -- the control characters are exactly what JSON must escape
const VERBATIM = /^[^"\\\u0000-\u001f\ud800-\udfff]*$/;
/** `text` as JSON.stringify writes it (the same bytes), without the call when nothing needs escaping. Pure. */
export function jsonString(text: string): string {
  return VERBATIM.test(text) ? `"${text}"` : JSON.stringify(text);
}

/** Keys V8 keeps first and in numeric order whatever their insertion order (array indices). */
const INDEX_LIKE = /^(?:0|[1-9]\d*)$/;
/** Marks a value the fast path cannot order (an object with an index-like key). */
const UNORDERABLE = Symbol("unorderable");

/**
 * `value` with every object's keys inserted in sorted order (`undefined` members dropped), so that
 * JSON.stringify writes it canonically; parts already in order are returned as they are, not
 * copied. UNORDERABLE when an object has an index-like key: V8 enumerates those first, numerically,
 * whatever the insertion order, so JSON.stringify could not write them sorted as strings.
 */
function ordered(value: unknown): unknown {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      const next = ordered(item);
      if (next === UNORDERABLE) return UNORDERABLE;
      if (next !== item && copy === undefined) copy = value.slice(0, i);
      if (copy !== undefined) copy.push(next);
    }
    return copy ?? value;
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  let sorted = true;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    // Only a key starting with a digit can be index-like: the rest skip the pattern.
    const first = key.charCodeAt(0);
    if (first >= 48 && first <= 57 && INDEX_LIKE.test(key)) return UNORDERABLE;
    if (i > 0 && keys[i - 1]! > key) sorted = false;
  }
  if (sorted) {
    let copy: Record<string, unknown> | undefined;
    for (let i = 0; i < keys.length; i++) {
      const item = record[keys[i]!];
      const next = ordered(item);
      if (next === UNORDERABLE) return UNORDERABLE;
      if ((next !== item || item === undefined) && copy === undefined) {
        copy = {};
        for (let j = 0; j < i; j++) copy[keys[j]!] = record[keys[j]!];
      }
      if (copy !== undefined && next !== undefined) copy[keys[i]!] = next;
    }
    return copy ?? value;
  }
  keys.sort();
  const copy: Record<string, unknown> = {};
  for (const key of keys) {
    const next = ordered(record[key]);
    if (next === UNORDERABLE) return UNORDERABLE;
    if (next !== undefined) copy[key] = next;
  }
  return copy;
}

/**
 * `value` with every object's keys in sorted order (parts already in order returned as they are,
 * not copied), so JSON.stringify writes it as canonicalJson does; undefined when it has an object
 * with an index-like key, which no key order can make JSON.stringify write sorted.
 */
export function orderedView<T>(value: T): T | undefined {
  const view = ordered(value);
  return view === UNORDERABLE ? undefined : (view as T);
}

/**
 * Canonical JSON of plain data (objects, arrays, strings, finite numbers, booleans, null): keys
 * sorted by UTF-16 code units at every depth. Written by JSON.stringify over a key-ordered view of
 * the value (ordered: native, an order of magnitude faster than joining strings here, which
 * dominated composing 10,000 declarations); an object with an index-like key takes the
 * string-joining path (canonicalSlow), the same bytes.
 */
export function canonicalJson(value: unknown): string {
  const view = ordered(value);
  return view === UNORDERABLE ? canonicalSlow(value) : JSON.stringify(view);
}

/** Canonical JSON by joining strings: every key order, index-like keys included. */
function canonicalSlow(value: unknown): string {
  if (typeof value === "string") return jsonString(value);
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) {
    let out = "[";
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ",";
      const item: unknown = value[i];
      out += item === undefined ? "null" : canonicalSlow(item);
    }
    return out + "]";
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record).sort();
  let out = "{";
  let first = true;
  for (const key of keys) {
    const item = record[key];
    if (item === undefined) continue;
    if (!first) out += ",";
    first = false;
    out += jsonString(key) + ":" + canonicalSlow(item);
  }
  return out + "}";
}
