/**
 * Canonical JSON: object keys sorted at every depth, no spaces, `undefined` members dropped, so
 * equal values give equal bytes. Digests are taken over this text.
 *
 * Composition is pure and cannot import node:crypto, so the hash itself arrives as a parameter:
 * `Digest` is a function from text to a lowercase hex digest (the shell passes sha256, e.g.
 * `(t) => createHash("sha256").update(t).digest("hex")`; DeclarationSent requires 64 hex chars).
 */
export type Digest = (text: string) => string;

/** Canonical JSON of plain data (objects, arrays, strings, finite numbers, booleans, null). */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? "null" : canonicalJson(v))).join(",")}]`;
  const entries = Object.keys(value as Record<string, unknown>)
    .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
  return `{${entries.join(",")}}`;
}
