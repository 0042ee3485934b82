import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { MAX_JSON_DEPTH, jsonDepthOver, parseRequestBody, pathPastDepth } from "../../../src/commands/validation.ts";

/** A request body as the command server reads it, before any schema (R65), without a server. */
describe("a request body at the boundary (R65)", () => {
  const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;
  const refusal = (text: string) => {
    const read = parseRequestBody(text);
    assert.ok(!read.ok, "refused");
    return read.refusal;
  };

  it("R65: one JSON object is read (an empty body is {}); anything else is invalid-json", () => {
    assert.deepEqual(parseRequestBody(""), { ok: true, body: {} });
    assert.deepEqual(parseRequestBody(`{"a":[1,{"b":2}]}`), { ok: true, body: { a: [1, { b: 2 }] } });
    for (const text of ["{", "[]", "null", "3", `"x"`]) assert.equal(refusal(text).code, "invalid-json", text);
  });

  it("R65: nested exactly MAX_JSON_DEPTH deep it is read; one more and it is refused, naming the limit, the field, and invalid-manifest within `manifest`", () => {
    assert.equal(MAX_JSON_DEPTH, 64);
    assert.ok(parseRequestBody(`{"limit":${nested(MAX_JSON_DEPTH - 1)}}`).ok, "the body's object and 63 arrays: 64");
    const over = refusal(`{"limit":${nested(MAX_JSON_DEPTH)}}`);
    assert.deepEqual([over.code, over.field], ["invalid-request", "limit"]);
    assert.match(over.message, /more than 64 deep/);
    const manifest = refusal(`{"manifest":{"name":"deep","version":"1","x":${nested(2_000)}}}`);
    assert.deepEqual([manifest.code, manifest.field], ["invalid-manifest", "manifest.x"]);
    const objects = refusal(`${`{"a":`.repeat(100)}1${"}".repeat(100)}`);
    assert.deepEqual([objects.code, objects.field], ["invalid-request", "a.a.a"], "the keys leading to it, three at most");
  });

  it("R65: a body nested 200,000 deep is refused without overflowing the stack", () => {
    const depth = 200_000;
    assert.equal(refusal(`{"manifest":${nested(depth)}}`).code, "invalid-manifest");
  });

  it("the depth walk: a scalar is 0 deep; the path to the first value past the limit, indexes as numbers", () => {
    assert.equal(pathPastDepth(5, 0), null);
    assert.deepEqual(pathPastDepth({}, 0), []);
    assert.deepEqual(pathPastDepth({ a: [{ b: 1 }] }, 2), ["a", 0]);
    assert.equal(pathPastDepth({ a: [{ b: 1 }] }, 3), null);
    assert.equal(jsonDepthOver({ a: [{ b: 1 }] }, 2), true);
    assert.equal(jsonDepthOver({ a: [{ b: 1 }] }), false);
  });
});
