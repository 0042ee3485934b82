import { describe, it, before } from "node:test";
import assert from "node:assert/strict";
import { gunzipSync, gzipSync } from "node:zlib";
import { evolve, initialState, startFold, type SequencedCommit, type State } from "../../src/projections/index.ts";
import { canonicalJson } from "../../src/projections/canonical.ts";
import { packState } from "../../src/projections/pack.ts";
import { ShardedMap } from "../../src/projections/shardedMap.ts";
import { STATE_SHAPE_VERSION, decodeSnapshot, encodeSnapshot } from "../../src/records/snapshots.ts";
import { EVENT_TYPES, generateCommits } from "../support/history.ts";

/** A state as its snapshot packs it, in canonical JSON (R41 compares these). */
const packedJson = (state: State): string => canonicalJson(packState(state));

describe("snapshot bodies (records/snapshots.ts)", () => {
  let commits: SequencedCommit[];
  let folded: State;
  let middle: number;
  before(() => {
    commits = generateCommits({ seed: 13, events: 20_000, maxNodes: 3000 }).map((commit, i) => ({ sequence: i + 1, commit }));
    assert.deepEqual(new Set(commits.flatMap(({ commit }) => commit.events.map((e) => e.type))), new Set(EVENT_TYPES), "every event type");
    middle = Math.floor(commits.length / 2);
    const fold = startFold(initialState);
    fold.add(commits.slice(0, middle));
    folded = fold.finish();
  });

  it("R41: a folded state written as a snapshot body and read back is the folded state, byte for byte, and folds the tail to the same state", async () => {
    const read = await decodeSnapshot(await encodeSnapshot(folded));
    assert.ok(read.state, "the body is read");
    assert.equal(packedJson(read.state), packedJson(folded));
    assert.deepStrictEqual(read.state, folded, "the same Maps, in the same order, and plain objects");
    assert.deepStrictEqual([...read.state.nodes.keys()], [...folded.nodes.keys()], "the Maps' order is kept");
    assert.equal(packedJson(evolve(read.state, commits.slice(middle))), packedJson(evolve(folded, commits.slice(middle))));
    const empty = await decodeSnapshot(await encodeSnapshot(initialState));
    assert.equal(packedJson(empty.state!), packedJson(initialState));
  });

  it("a body is ASCII whatever the state's spelling (read as latin1, without a UTF-8 decode), and reads back every character", async () => {
    const spelled = ["é-node", "𝄞", "\u2028", "\ud800", "x\"y\\z", "\u0000", ""];
    const placed = new ShardedMap(folded.overlay.placed);
    spelled.forEach((key) => { placed.set(key, `hub-${key}`); });
    const state: State = { ...folded, overlay: { ...folded.overlay, placed } };
    const bytes = await encodeSnapshot(state);
    assert.ok(gunzipSync(bytes).every((byte) => byte < 0x80), "ASCII only");
    const read = await decodeSnapshot(bytes);
    assert.equal(packedJson(read.state!), packedJson(state));
    assert.equal(read.state?.overlay.placed.get("𝄞"), "hub-𝄞");
  });

  it("R46: a body of another shape version, of a release before versions, missing a slice, or that does not parse is not read, and why is said in one line", async () => {
    const body = JSON.parse(JSON.stringify({ version: STATE_SHAPE_VERSION, state: packState(folded) })) as { version: number; state: Record<string, unknown> };
    const { sent: _dropped, ...withoutSent } = body.state;
    const cases: [Uint8Array, RegExp][] = [
      [new TextEncoder().encode(JSON.stringify({ ...body, version: STATE_SHAPE_VERSION - 1 })), new RegExp(`shape version ${STATE_SHAPE_VERSION - 1}.*reads ${STATE_SHAPE_VERSION}`)],
      [gzipSync(JSON.stringify({ ...body, version: STATE_SHAPE_VERSION + 1 })), new RegExp(`shape version ${STATE_SHAPE_VERSION + 1}`)],
      [gzipSync(JSON.stringify(body.state)), /no shape version/],
      [gzipSync(JSON.stringify({ version: STATE_SHAPE_VERSION, state: withoutSent })), /lacks sent/],
      [gzipSync(JSON.stringify({ version: STATE_SHAPE_VERSION, state: { ...body.state, nodes: { keys: ["a"], values: [] } } })), /does not parse/],
      [gzipSync("{not json"), /does not parse/],
      [new Uint8Array([0x1f, 0x8b, 1, 2, 3]), /does not parse/],
    ];
    for (const [bytes, why] of cases) {
      const read = await decodeSnapshot(bytes);
      assert.equal(read.state, null);
      assert.ok(read.state === null && read.ignored !== undefined);
      assert.match(read.ignored, why);
      assert.equal(read.ignored.includes("\n"), false, "one line");
    }
  });
});
