import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { appliedSequence, evolve, initialState, startFold, type SequencedCommit } from "../../src/projections/index.ts";
import { canonicalJson } from "../../src/projections/canonical.ts";
import { generateCommits } from "../support/history.ts";

const commits: SequencedCommit[] = generateCommits({ seed: 11, events: 3000 }).map((commit, i) => ({ sequence: i + 1, commit }));

describe("long folds", () => {
  it("R41: a fold in one draft, a fold into a copy and evolve batch by batch give the same state, byte for byte", () => {
    let stepwise = initialState;
    for (let i = 0; i < commits.length; i += 100) stepwise = evolve(stepwise, commits.slice(i, i + 100));
    for (const mode of ["draft", "copy"] as const) {
      const half = Math.floor(commits.length / 2);
      const first = startFold(initialState, mode);
      first.add(commits.slice(0, half));
      const middle = first.finish();
      const second = startFold(middle, mode);
      for (let i = half; i < commits.length; i += 250) second.add(commits.slice(i, i + 250));
      assert.equal(canonicalJson(second.finish()), canonicalJson(stepwise), mode);
      assert.equal(second.finish(), second.finish(), "finish is idempotent");
      assert.equal(middle.sequence, half, `${mode}: the state it started from is left as it was`);
    }
  });

  it("R40: every applied command id is found with its commit's sequence, and no other", () => {
    const state = evolve(initialState, commits);
    for (const { sequence, commit } of commits) assert.equal(appliedSequence(state, commit.commandId), sequence);
    assert.equal(appliedSequence(state, "never-sent"), undefined);
  });
});
