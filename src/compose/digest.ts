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
function jsonString(text: string): string {
  return VERBATIM.test(text) ? `"${text}"` : JSON.stringify(text);
}

/** Canonical JSON of plain data (objects, arrays, strings, finite numbers, booleans, null). */
export function canonicalJson(value: unknown): string {
  if (typeof value === "string") return jsonString(value);
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) {
    let out = "[";
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ",";
      const item: unknown = value[i];
      out += item === undefined ? "null" : canonicalJson(item);
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
    out += jsonString(key) + ":" + canonicalJson(item);
  }
  return out + "}";
}
