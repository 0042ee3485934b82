import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { canonicalJson } from "../../src/projections/canonical.ts";
import { evolve, initialState } from "../../src/projections/index.ts";
import { generateCommits } from "../support/history.ts";

describe("canonical JSON", () => {
  it("R41: sorts keys at every depth, integer-like keys too, with no whitespace", () => {
    assert.equal(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } }), '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}');
    assert.equal(canonicalJson({ 10: "x", 9: "y", a: "z" }), '{"10":"x","9":"y","a":"z"}');
  });

  it("R41: the same value built in a different key order gives the same bytes", () => {
    const one = { nodes: { beta: { name: "beta" }, alpha: { name: "alpha" } }, sequence: 2 };
    const two = { sequence: 2, nodes: { alpha: { name: "alpha" }, beta: { name: "beta" } } };
    assert.notEqual(JSON.stringify(one), JSON.stringify(two));
    assert.equal(canonicalJson(one), canonicalJson(two));
    assert.notEqual(canonicalJson(one), canonicalJson({ ...two, sequence: 3 }));
  });

  it("drops what JSON drops, keeps strings exact, and refuses a cycle", () => {
    assert.equal(canonicalJson({ a: undefined, b: () => 1, c: [undefined, "é\n\"q\""] }), '{"c":[null,"é\\n\\"q\\""]}');
    assert.equal(canonicalJson("x"), '"x"');
    assert.equal(canonicalJson(undefined), "null");
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    assert.throws(() => canonicalJson(cycle), TypeError);
    assert.throws(() => canonicalJson({ n: 1n }), TypeError);
  });

  it("R41: parses back to the value it was given (a folded state of every event type)", () => {
    const commits = generateCommits({ seed: 3, events: 500 }).map((commit, i) => ({ sequence: i + 1, commit }));
    const state = evolve(initialState, commits);
    assert.deepEqual(JSON.parse(canonicalJson(state)), JSON.parse(JSON.stringify(state)));
  });
});
