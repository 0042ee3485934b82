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

  it("R48: a copy fold (with its delivery index) and evolve agree over churning histories, removals of delivered nodes included", () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const churn: SequencedCommit[] = generateCommits({ seed, events: 4000, maxNodes: 12 }).map((commit, i) => ({ sequence: i + 1, commit }));
      let stepwise = initialState;
      let removedDelivered = 0;
      for (const step of churn) {
        for (const event of step.commit.events) {
          if (event.type !== "NodeRemoved") continue;
          if (Object.values(stepwise.credentials).some((record) => record.deliveredTo?.includes(event.node))) removedDelivered += 1;
        }
        stepwise = evolve(stepwise, [step]);
      }
      assert.ok(removedDelivered > 0, `seed ${seed}: the history removes a node some credential was delivered to`);
      const fold = startFold(initialState, "copy");
      const third = Math.floor(churn.length / 3);
      fold.add(churn.slice(0, third));
      const resumed = startFold(fold.finish(), "copy"); // an index built from a state that already has deliveries
      for (let i = third; i < churn.length; i += 97) resumed.add(churn.slice(i, i + 97));
      assert.equal(canonicalJson(resumed.finish()), canonicalJson(stepwise), `seed ${seed}`);
    }
  });

  it("R40: every applied command id is found with its commit's sequence, and no other", () => {
    const state = evolve(initialState, commits);
    for (const { sequence, commit } of commits) assert.equal(appliedSequence(state, commit.commandId), sequence);
    assert.equal(appliedSequence(state, "never-sent"), undefined);
  });
});
