import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { canonicalJson } from "../../../src/compose/index.ts";

/** The definition canonicalJson keeps: keys sorted at every depth, every string as JSON.stringify writes it. */
function reference(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map((item) => (item === undefined ? "null" : reference(item))).join(",")}]`;
  const record = value as Record<string, unknown>;
  return `{${Object.keys(record).sort().filter((k) => record[k] !== undefined).map((k) => `${JSON.stringify(k)}:${reference(record[k])}`).join(",")}}`;
}

describe("canonical JSON of declarations", () => {
  it("R11: strings written without JSON.stringify give the same bytes as JSON.stringify, escapes and surrogates included", () => {
    const strings = ["", "plain", "mesh.work.build.>", "$JS.API.>", "q\"uote", "back\\slash", "new\nline", "\u0000\u001f", "\u007f\u2028\u2029",
      "é ü", "😀", "\ud800 lone", "lone \udc00", "tab\t", "/slash/"];
    for (const text of strings) assert.equal(canonicalJson(text), JSON.stringify(text), JSON.stringify(text));
    const value = Object.fromEntries(strings.map((text, i) => [text, { [`k${i}`]: [text, i, null, true, undefined], nested: { text } }]));
    assert.equal(canonicalJson(value), reference(value));
  });

  it("R11: every key order gives the reference's bytes: sorted or not, index-like keys, undefined members and holes at any depth", () => {
    const values: unknown[] = [
      { a: 1, b: { c: [1, { e: 2, d: 3 }] } }, // sorted outside, not inside
      { b: 1, a: 2 }, // not sorted
      { a: 1, b: undefined, c: [undefined, { x: undefined, y: 1 }] }, // sorted, with undefined members
      { 10: "x", 9: "y", a: "z" }, // index-like keys: V8 enumerates them first, numerically
      { nodes: { b: { 2: "two", 1: "one" }, a: [] } }, // index-like keys deep inside
      { "01": 1, "1": 2, "-1": 3, "1.5": 4 }, // only "1" is index-like
      [{ z: 1, y: [{ b: 1, a: 0 }] }, "s", 0, null, false],
      [], {}, "text", 12.5, null,
    ];
    for (const value of values) assert.equal(canonicalJson(value), reference(value), JSON.stringify(value));
  });
});
