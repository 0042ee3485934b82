import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  awaitedNodes, composeAgain, firstDeclarations, freshProvisions, judgeWait, planRound, reportsToRead, rotationBrokers, roundBound, settleRound, unconfirmedNodes, unknownNamed,
  unappliedCounts, type LastReported, type NodeReport, type PlannedSend, type WaitSeen,
} from "../../src/push/plan.ts";
import { composeDeclarations, type DeclarationResult } from "../../src/compose/declaration.ts";
import { evolve, holdersOf, nodeOf, type State } from "../../src/projections/index.ts";
import { BROKER_SEAT } from "../../src/names.ts";
import { sha256 } from "../../src/push/composition.ts";
import { NEW_NODE_BACKOFF_MAX_MS } from "../../src/host/plan.ts";
import { EXAMPLE_CONFIG, MeshBuilder, exampleMesh, fakeHash, manifests } from "./compose/exampleMesh.ts";

/**
 * The push's plan without a server: which nodes a round sends and in which order, what each line
 * says after the sends and after the wait. push.ts carries these plans out over the bus.
 */

const composed = (state: State): DeclarationResult[] => composeDeclarations(state, EXAMPLE_CONFIG, sha256).declarations;

/** The state after recording `sends` as sent (DeclarationSent), as push does after publishing. */
function recorded(state: State, sends: readonly PlannedSend[]): State {
  const events = sends.map((s) => ({ actor: "controller-mesh-controller", commandId: "sent", at: "2026-01-01T00:00:00.000Z", type: "DeclarationSent" as const, node: s.node, digest: s.digest, recordsSequence: state.sequence }));
  return evolve(state, [{ sequence: state.sequence + 1, commit: { commandId: "sent", entity: { kind: "push", id: "p" }, events } }]);
}

describe("push plan: planRound (R29, R30, R31)", () => {
  it("R31: a first push sends every node (none was sent anything); once recorded, none is behind and nothing is sent", () => {
    const { state } = exampleMesh();
    const first = planRound(state, composed(state), new Set(), 0);
    assert.deepEqual(first.sends.map((s) => s.node).sort(), ["alpha", "beta", "gamma"]);
    assert.ok(first.sends.every((s) => s.behind && s.recordsSequence === state.sequence && s.publicKey === nodeOf(state.nodes, s.node)!.publicKey));
    assert.deepEqual(first.refused, []);
    const after = recorded(state, first.sends);
    const second = planRound(after, composed(after), new Set(), 1);
    assert.deepEqual(second.sends, []);
    assert.deepEqual(second.unchanged.map((u) => u.node), ["alpha", "beta", "gamma"]);
  });

  it("R1: a push's first declarations go to the nodes never sent one, the broker's holders aside (genesis carries the genesis node, R56); none once recorded", () => {
    const { state } = exampleMesh();
    const brokers = holdersOf(state, BROKER_SEAT);
    assert.ok(brokers.length > 0, "the example mesh has a broker holder");
    assert.deepEqual([...firstDeclarations(state)].sort(), ["alpha", "beta", "gamma"].filter((n) => !brokers.includes(n)));
    const after = recorded(state, planRound(state, composed(state), new Set(), 0).sends);
    assert.deepEqual([...firstDeclarations(after)], []);
  });

  it("R31: a named node not behind is sent in round 0 only (behind: false); the behind ones are sent with it", () => {
    const { state } = exampleMesh();
    const all = planRound(state, composed(state), new Set(), 0).sends;
    const after = recorded(state, all.filter((s) => s.node !== "gamma"));
    const named = planRound(after, composed(after), new Set(["beta"]), 0);
    assert.deepEqual(named.sends.map((s) => [s.node, s.behind]), [["beta", false], ["gamma", true]]);
    assert.deepEqual(named.unchanged.map((u) => u.node), ["alpha"]);
    const later = planRound(after, composed(after), new Set(["beta"]), 1);
    assert.deepEqual(later.sends.map((s) => s.node), ["gamma"], "a later round sends only the behind");
  });

  it("R29: a node with nothing assigned is sent its empty declaration", () => {
    const b = new MeshBuilder(fakeHash).genesis().controller().node("idle");
    const state = b.state();
    const plan = planRound(state, composed(state), new Set(), 0);
    assert.deepEqual(plan.sends.map((s) => [s.node, s.declaration.modules.length]), [["idle", 0]]);
  });

  it("R30: a node that cannot be composed is refused with its composition's code and the rest are sent", () => {
    const b = new MeshBuilder(fakeHash).genesis().controller().node("n1").node("n2").node("n3");
    for (const m of Object.values(manifests)) b.register(m);
    b.issue("showcase").issue("git-server").assign("showcase", "n1").assign("git-server", "n2");
    const state = b.state();
    const plan = planRound(state, composed(state), new Set(), 0);
    assert.deepEqual(plan.refused.map((r) => [r.node, r.refusal.code]), [["n1", "provision-missing"], ["n2", "provision-missing"]]);
    assert.deepEqual(plan.sends.map((s) => s.node), ["n3"]);
  });

  it("R12 R44: a node without a credential (revoked by an accepted restore, or by hand) is refused no-credential: nothing is sealed or sent to it, nor waited for; the rest are sent", () => {
    const b = new MeshBuilder(fakeHash).genesis().controller().node("kept").node("revoked", false).node("sent-before");
    const state = b.state();
    const plan = planRound(state, composed(state), new Set(["revoked"]), 0);
    assert.deepEqual(plan.refused.map((r) => [r.node, r.refusal.code]), [["revoked", "no-credential"]]);
    assert.match(plan.refused[0]!.refusal.message, /mesh node remove revoked/);
    assert.deepEqual(plan.sends.map((s) => s.node).sort(), ["kept", "sent-before"]);
    assert.deepEqual(plan.unchanged, []);
    // Once recorded as sent, a node whose credential goes is refused too, not counted unchanged.
    const after = recorded(state, plan.sends);
    const again = planRound(after, composed(after), new Set(), 1);
    assert.deepEqual(again.refused.map((r) => r.node), ["revoked"]);
    assert.deepEqual(again.sends, []);
    const awaited = awaitedNodes({ sentDigests: new Map(plan.sends.map((s) => [s.node, s.digest])), appliedBefore: new Map(), unconfirmed: [] });
    assert.ok(!awaited.includes("revoked"), "the wait never names it");
  });

  it("R11: broker holders are sent last, with the user list text their declaration names; nobody else carries one", () => {
    const { state } = exampleMesh();
    const plan = planRound(state, composed(state), new Set(), 0);
    assert.equal(plan.sends.at(-1)!.node, "alpha", "alpha holds mesh-broker");
    assert.ok(plan.sends.at(-1)!.userListText && plan.sends.at(-1)!.declaration.userList);
    assert.ok(plan.sends.slice(0, -1).every((s) => s.userListText === undefined));
  });

  it("R12: each composed node's modules left out, or null to clear an earlier round's", () => {
    const b = new MeshBuilder(fakeHash).genesis().controller().node("n1").node("n2");
    b.register(manifests.store).issue("store", false).assign("store", "n1");
    const state = b.state();
    const plan = planRound(state, composed(state), new Set(), 0);
    assert.deepEqual(plan.modulesLeftOut.get("n1")?.map((m) => m.module), ["store"]);
    assert.equal(plan.modulesLeftOut.get("n2"), null);
  });

  it("R31: the round bound is the node count plus one; named nodes not enrolled are refused unknown-node", () => {
    const { state } = exampleMesh();
    assert.equal(roundBound(state), 4);
    assert.deepEqual(unknownNamed(state, ["beta", "nosuch"]).map((l) => [l.node, l.outcome, l.refusal?.code]), [["nosuch", "refused", "unknown-node"]]);
  });

  it("R31: a round whose sends all landed, with nothing folded since it composed but its own records, needs no next round: composing again would send nothing", () => {
    const { state } = exampleMesh();
    const first = planRound(state, composed(state), new Set(), 0);
    const after = recorded(state, first.sends);
    assert.deepEqual(planRound(after, composed(after), new Set(), 1).sends, [], "the round it skips would send nothing");
    assert.equal(composeAgain({ composedAt: state.sequence, recorded: [state.sequence + 1], foldedTo: after.sequence, unsent: 0 }), false);
    assert.equal(composeAgain({ composedAt: 10, recorded: [11, 12], foldedTo: 12, unsent: 0 }), false, "its records in several commits");
    assert.equal(composeAgain({ composedAt: 10, recorded: [], foldedTo: 10, unsent: 0 }), false, "nothing to record");
  });

  it("R31: the records moved under the round (a commit not its own was folded), or a send failed or was refused to seal: it composes again", () => {
    assert.equal(composeAgain({ composedAt: 10, recorded: [12], foldedTo: 12, unsent: 0 }), true, "another commit before its record");
    assert.equal(composeAgain({ composedAt: 10, recorded: [11], foldedTo: 12, unsent: 0 }), true, "another commit after its record");
    assert.equal(composeAgain({ composedAt: 10, recorded: [], foldedTo: 11, unsent: 0 }), true, "another commit, nothing recorded");
    assert.equal(composeAgain({ composedAt: 10, recorded: [11], foldedTo: 11, unsent: 1 }), true, "a node not sent is still behind");
  });

});

describe("push plan: a node behind by its last report (R78)", () => {
  /** The example mesh with every node's composed declaration recorded as sent, and those digests. */
  function allSent(): { state: State; digests: Map<string, string> } {
    const { state: fresh } = exampleMesh();
    const state = recorded(fresh, planRound(fresh, composed(fresh), new Set(), 0).sends);
    const digests = new Map(composed(state).flatMap((r) => (r.ok ? [[r.declaration.node, r.declaration.digest] as const] : [])));
    return { state, digests };
  }
  const OLDER = "0".repeat(64);
  const noReports: LastReported = new Map(["alpha", "beta", "gamma"].map((n) => [n, null]));

  it("R78: a push without names, in its first round, re-sends every node whose last report is not its current declaration applied (failed, older, missing); one that reported applying it is unchanged", () => {
    const { state, digests } = allSent();
    const reported: LastReported = new Map([
      ["alpha", { digest: digests.get("alpha")!, ok: true }],
      ["beta", { digest: digests.get("beta")!, ok: false }],
      ["gamma", { digest: OLDER, ok: true }],
    ]);
    const plan = planRound(state, composed(state), new Set(), 0, reported);
    assert.deepEqual(plan.sends.map((s) => [s.node, s.behind, s.unapplied]).sort(), [["beta", true, "failed"], ["gamma", true, "older"]]);
    assert.deepEqual(plan.unchanged.map((u) => u.node), ["alpha"]);
    assert.deepEqual(unappliedCounts(plan.sends), { failed: 1, older: 1, missing: 0 });
    const none = planRound(state, composed(state), new Set(), 0, noReports);
    assert.deepEqual(none.sends.map((s) => [s.node, s.unapplied]).sort(), [["alpha", "missing"], ["beta", "missing"], ["gamma", "missing"]], "no report at all: every node is re-sent");
    assert.deepEqual(unappliedCounts(none.sends), { failed: 0, older: 0, missing: 3 });
    const unread = planRound(state, composed(state), new Set(), 0, new Map([["beta", null]]));
    assert.deepEqual(unread.sends.map((s) => s.node), ["beta"], "a node whose report was not read (its read failed) has no say: not re-sent");
    assert.deepEqual(planRound(state, composed(state), new Set(), 0).sends, [], "no reports given: none is considered");
  });

  it("R78 R31: a later round never re-sends by report (the node sent in round 0 has not reported yet): one re-send per node per push, within the round bound", () => {
    const { state } = allSent();
    const plan = planRound(state, composed(state), new Set(), 1, noReports);
    assert.deepEqual(plan.sends, []);
    assert.deepEqual(plan.unchanged.map((u) => u.node).sort(), ["alpha", "beta", "gamma"]);
  });

  it("R78: a report of the current digest applied does not hold back a node whose composed declaration differs from the one last sent", () => {
    const { state: fresh } = exampleMesh();
    const first = planRound(fresh, composed(fresh), new Set(), 0);
    const state = recorded(fresh, first.sends.filter((s) => s.node !== "beta"));
    const reported: LastReported = new Map(first.sends.map((s) => [s.node, { digest: s.digest, ok: true }]));
    const plan = planRound(state, composed(state), new Set(), 0, reported);
    assert.deepEqual(plan.sends.map((s) => [s.node, s.behind, s.unapplied]), [["beta", true, undefined]], "behind by what was sent; its report has no say");
  });

  it("R78 R31: a named push sends the named node and every node behind by its report; a named node whose report is the current declaration applied is sent as named (behind: false)", () => {
    const { state, digests } = allSent();
    const reported: LastReported = new Map([
      ["alpha", { digest: digests.get("alpha")!, ok: true }],
      ["beta", { digest: digests.get("beta")!, ok: true }],
      ["gamma", null],
    ]);
    const plan = planRound(state, composed(state), new Set(["beta"]), 0, reported);
    assert.deepEqual(plan.sends.map((s) => [s.node, s.behind, s.unapplied]).sort(), [["beta", false, undefined], ["gamma", true, "missing"]]);
    assert.deepEqual(plan.unchanged.map((u) => u.node), ["alpha"]);
  });

  it("R78 R11: a broker holder re-sent by its report still goes last, with its user list", () => {
    const { state } = allSent();
    const plan = planRound(state, composed(state), new Set(), 0, noReports);
    assert.equal(plan.sends.at(-1)!.node, "alpha", "alpha holds mesh-broker");
    assert.ok(plan.sends.at(-1)!.userListText !== undefined);
  });

  it("R78: the reports a first round reads are those of the composed nodes it would not send anyway: not behind by what was sent, not named, not refused, not without a credential", () => {
    const { state: fresh } = exampleMesh();
    assert.deepEqual(reportsToRead(fresh, composed(fresh), new Set()), [], "nothing sent yet: every node is sent, no report needed");
    const first = planRound(fresh, composed(fresh), new Set(), 0);
    const state = recorded(fresh, first.sends.filter((s) => s.node !== "beta"));
    assert.deepEqual(reportsToRead(state, composed(state), new Set()).sort(), ["alpha", "gamma"]);
    assert.deepEqual(reportsToRead(state, composed(state), new Set(["gamma"])), ["alpha"]);
    const b = new MeshBuilder(fakeHash).genesis().controller().node("kept").node("revoked", false);
    const bare = b.state();
    const sentBare = recorded(bare, planRound(bare, composed(bare), new Set(), 0).sends);
    assert.deepEqual(reportsToRead(sentBare, composed(sentBare), new Set()), ["kept"]);
  });
});

describe("push plan: the controller's rotation (R14)", () => {
  it("R14: the broker holders confirm it with the digest this push sent them, else the one sent before; a holder never sent anything cannot", () => {
    const { state } = exampleMesh();
    assert.deepEqual(rotationBrokers(state, new Map()), [], "alpha holds mesh-broker but was never sent anything");
    assert.deepEqual(rotationBrokers(state, new Map([["alpha", "now"], ["beta", "other"]])), [{ node: "alpha", digest: "now" }]);
    const sent = planRound(state, composed(state), new Set(), 0).sends;
    const after = recorded(state, sent);
    const alpha = sent.find((s) => s.node === "alpha")!.digest;
    assert.deepEqual(rotationBrokers(after, new Map()), [{ node: "alpha", digest: alpha }]);
    assert.deepEqual(rotationBrokers(after, new Map([["alpha", "newer"]])), [{ node: "alpha", digest: "newer" }]);
  });
});

describe("push plan: settleRound and judgeWait (R32, R55)", () => {
  const send = (node: string): PlannedSend => ({ node, digest: `d-${node}`, declaration: {} as PlannedSend["declaration"], publicKey: "k", recordsSequence: 1, behind: true });

  it("a send's line: refused (seal-failed) when a secret could not be sealed, failed when its publish failed, else sent", () => {
    const settled = settleRound([send("a"), send("b"), send("c")], new Map([["b", "timeout"]]), new Map([["a", "bad key"]]));
    assert.deepEqual(settled.sent.map((s) => s.node), ["c"]);
    assert.deepEqual(settled.lines.map((l) => [l.node, l.outcome, l.refusal?.code ?? l.error ?? l.digest]), [
      ["a", "refused", "seal-failed"], ["b", "failed", "not sent: timeout"], ["c", "sent", "d-c"],
    ]);
  });

  it("R32 R55: every case of a line after the wait", () => {
    const lines = new Map<string, NodeReport>([
      ["again", { node: "again", outcome: "sent", digest: "d1" }],
      ["applied", { node: "applied", outcome: "sent", digest: "d2" }],
      ["failed", { node: "failed", outcome: "sent", digest: "d3" }],
      ["silent", { node: "silent", outcome: "sent", digest: "d4" }],
      ["new", { node: "new", outcome: "sent", digest: "d9" }],
      ["old-ok", { node: "old-ok", outcome: "unchanged", digest: "d5" }],
      ["old-live", { node: "old-live", outcome: "unchanged", digest: "d6" }],
      ["old-failed", { node: "old-failed", outcome: "unchanged", digest: "d7" }],
      ["old-silent", { node: "old-silent", outcome: "unchanged", digest: "d8abcdef01234567" }],
      ["refused", { node: "refused", outcome: "refused" }],
    ]);
    const sentDigests = new Map([["again", "d1"], ["applied", "d2"], ["failed", "d3"], ["silent", "d4"], ["new", "d9"]]);
    const unconfirmed = unconfirmedNodes(lines.values(), sentDigests);
    assert.deepEqual(unconfirmed, ["old-ok", "old-live", "old-failed", "old-silent"]);
    const reports: Record<string, { ok: boolean; error?: string }> = {
      applied: { ok: true }, failed: { ok: false, error: "first line\nsecond" }, "old-ok": { ok: true }, "old-live": { ok: true }, "old-failed": { ok: false },
    };
    const seen: WaitSeen = {
      sentDigests, unconfirmed, firstSent: new Set(["new"]),
      appliedBefore: new Map([["again", { digest: "d1", at: "2026-01-01T00:00:00.000Z" }], ["applied", { digest: "older", at: "x" }]]),
      report: (node) => reports[node],
      storedAt: (node) => (node === "old-ok" ? "2025-12-31T00:00:00.000Z" : undefined),
    };
    assert.deepEqual(awaitedNodes(seen), ["applied", "failed", "silent", "new", ...unconfirmed], "a node sent again what it reported applying is not waited for");
    judgeWait(lines, seen);
    const by = (node: string) => { const l = lines.get(node)!; return [l.outcome, l.reportedAt ?? l.error ?? ""]; };
    assert.deepEqual(by("again"), ["unchanged", "2026-01-01T00:00:00.000Z"]);
    assert.deepEqual(by("applied"), ["applied", ""]);
    assert.deepEqual(by("failed"), ["failed", "first line"]);
    assert.equal(by("silent")[0], "timed-out");
    assert.match(String(by("silent")[1]), /agent/, "a sent node without a report says why");
    assert.equal(by("new")[0], "timed-out");
    assert.ok(String(by("new")[1]).includes("first declaration") && String(by("new")[1]).includes(`${NEW_NODE_BACKOFF_MAX_MS / 1000} s`), "R1: a node sent its first declaration: the bus admits it only since this push's list, and its agent's backoff");
    assert.deepEqual(by("old-ok"), ["unchanged", "2025-12-31T00:00:00.000Z"]);
    assert.deepEqual(by("old-live"), ["unchanged", ""]);
    assert.deepEqual(by("old-failed"), ["failed", "the node could not apply it"]);
    assert.equal(by("old-silent")[0], "timed-out");
    assert.ok(String(by("old-silent")[1]).includes("d8abcdef0123") && String(by("old-silent")[1]).includes("agent"));
    assert.deepEqual(by("refused"), ["refused", ""]);
  });
});

describe("push plan: fresh provisions (R44, R48)", () => {
  const commit = (state: State, events: Array<Record<string, unknown>>): State =>
    evolve(state, [{ sequence: state.sequence + 1, commit: { commandId: `c${state.sequence + 1}`, entity: { kind: "test", id: "t" }, events: events.map((e) => ({ actor: "operator-ada", commandId: `c${state.sequence + 1}`, at: "2026-01-01T00:00:00.000Z", ...e })) as never } }]);
  const rotation = { type: "ProvisionRotated", seat: "git", provision: "git", consumer: "showcase", user: "showcase", sealed: "sealed-fresh" };

  it("R48: a rotated provision is fresh until every node receiving (the consumer's) or granting it (the seat's holders) was sent a declaration composed after it; one whose consumer runs nowhere is carried to no one", () => {
    const { state } = exampleMesh();
    const sent = recorded(state, planRound(state, composed(state), new Set(), 0).sends);
    const rotated = commit(sent, [rotation]);
    assert.deepEqual(freshProvisions(rotated, rotated), [{ seat: "git", provision: "git", consumer: "showcase" }]);
    const beta = recorded(rotated, planRound(rotated, composed(rotated), new Set(["beta"]), 0).sends.filter((s) => s.node === "beta"));
    assert.deepEqual(freshProvisions(beta, beta), [{ seat: "git", provision: "git", consumer: "showcase" }], "gamma (the consumer's node) was not sent it yet");
    const both = recorded(beta, planRound(beta, composed(beta), new Set(), 0).sends);
    assert.deepEqual(freshProvisions(both, both), []);
    assert.deepEqual(freshProvisions(both, beta), [{ seat: "git", provision: "git", consumer: "showcase" }], "judged by what the nodes were sent before the push");
    const idle = commit(rotated, [{ type: "ModuleUnassigned", module: "showcase", node: "gamma" }]);
    assert.deepEqual(freshProvisions(idle, idle), []);
  });
});
