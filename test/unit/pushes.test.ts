import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { pushesOf, pushesSince } from "../../src/commands/pushes.ts";
import { evolve, initialState, type SequencedCommit } from "../../src/projections/index.ts";
import type { Commit } from "../../src/events/index.ts";

/** A push's DeclarationSent commit: `nodes` sent at `at`, composed from `recordsSequence`. */
function sentCommit(sequence: number, push: string, at: string, recordsSequence: number, nodes: string[], part = 0): SequencedCommit {
  const commandId = `${push}-sent-0-${part}`;
  const commit: Commit = {
    commandId, entity: { kind: "push", id: push },
    events: nodes.map((node) => ({ type: "DeclarationSent" as const, actor: "operator-ada", commandId, at, node, digest: `d-${push}-${node}`, recordsSequence })),
  };
  return { sequence, commit };
}

/** Some other commit (an assignment) between pushes. */
function otherCommit(sequence: number): SequencedCommit {
  const commandId = `c${sequence}`;
  return { sequence, commit: { commandId, entity: { kind: "node", id: "alpha" }, events: [{ type: "ModuleAssigned", actor: "operator-ada", commandId, at: "t", module: "m", node: "alpha" }] } };
}

describe("pushes: the newest pushes as the records tell them (R31)", () => {
  const commits = [
    otherCommit(1),
    sentCommit(2, "push-a", "2026-01-01T00:00:00.000Z", 1, ["alpha", "beta"]),
    otherCommit(3),
    sentCommit(4, "push-b", "2026-01-02T00:00:00.000Z", 3, ["alpha"]),
    sentCommit(5, "push-b", "2026-01-02T00:00:00.000Z", 3, ["gamma"], 1),
    otherCommit(6),
  ];

  it("groups a push's commits under its id, newest first, counting every node sent", () => {
    const { pushes } = pushesOf(commits, { limit: 5 });
    assert.deepEqual(pushes.map((p) => p.id), ["push-b", "push-a"]);
    assert.deepEqual(pushes[0], {
      id: "push-b", at: "2026-01-02T00:00:00.000Z", actor: "operator-ada", commandIds: ["push-b-sent-0-0", "push-b-sent-0-1"], sequences: [4, 5],
      recordsSequence: 3, sent: 2, nodes: [{ node: "alpha", digest: "d-push-b-alpha" }, { node: "gamma", digest: "d-push-b-gamma" }], provisions: 0,
    });
    assert.equal(pushesOf(commits, { limit: 1 }).pushes.length, 1);
  });

  it("scans from the oldest of the newest pushes the nodes were last sent, or from 1 when fewer are left there", () => {
    const state = evolve(initialState, commits);
    // alpha and gamma were last sent by push-b (records sequence 3), beta by push-a (1).
    assert.equal(pushesSince(state, 1), 3);
    assert.equal(pushesSince(state, 2), 1);
    assert.equal(pushesSince(state, 3), 1);
    // Scanning from there gives the same newest push as scanning everything.
    const since = pushesSince(state, 1);
    assert.deepEqual(pushesOf(commits.filter((c) => c.sequence >= since), { limit: 1 }), pushesOf(commits, { limit: 1 }));
  });
});
