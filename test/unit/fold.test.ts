import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { appliedSequence, assignedModules, modulesOnNode, everyCredential, everyProvision, evolve, principalOfModule, initialState, lastSent, startFold, SLICE_ORDER, type SequencedCommit, type State } from "../../src/projections/index.ts";
import type { MeshEvent } from "../../src/events/index.ts";
import { canonicalJson } from "../../src/projections/canonical.ts";
import { packState, unpackState } from "../../src/projections/pack.ts";
import { encodeSnapshot } from "../../src/records/snapshots.ts";
import { EVENT_TYPES, generateCommits, prng } from "../support/history.ts";

/** A state as its snapshot packs it, in canonical JSON: what R41 compares. */
const packed = (state: State): string => canonicalJson(packState(state));
/** A fold of `commits` with startFold from `state`, added in batches of `size`. */
function folded(state: State, commits: readonly SequencedCommit[], size: number): State {
  const fold = startFold(state);
  for (let i = 0; i < commits.length; i += size) fold.add(commits.slice(i, i + size));
  return fold.finish();
}

const commits: SequencedCommit[] = generateCommits({ seed: 11, events: 3000 }).map((commit, i) => ({ sequence: i + 1, commit }));

describe("long folds", () => {
  it("R41: random histories folded commit by commit, in evolve batches, fresh and in one draft give the same states and the same snapshots", async () => {
    for (const seed of [11, 31, 32, 33, 34, 35]) {
      const random = prng(seed * 7919);
      const history: SequencedCommit[] = generateCommits({ seed, events: 1500 + Math.floor(random() * 1500), maxNodes: 5 + Math.floor(random() * 40) })
        .map((commit, i) => ({ sequence: i + 1, commit }));
      let stepwise = initialState;
      for (const step of history) stepwise = evolve(stepwise, [step]);
      let batched = initialState;
      for (let i = 0; i < history.length; ) {
        const size = 1 + Math.floor(random() * 60);
        batched = evolve(batched, history.slice(i, i + size));
        i += size;
      }
      const fresh = folded(initialState, history, 1 + Math.floor(random() * 500));
      const cut = Math.floor(random() * history.length);
      const head = evolve(initialState, history.slice(0, cut));
      const before = packed(head);
      const drafted = folded(head, history.slice(cut), 1 + Math.floor(random() * 300));
      assert.equal(packed(head), before, `seed ${seed}: the state a draft fold started from is left as it was`);
      const expected = packed(stepwise);
      for (const [how, state] of [["evolve batches", batched], ["fresh", fresh], ["draft", drafted]] as const) {
        assert.equal(packed(state), expected, `seed ${seed}: ${how}`);
        assert.deepEqual(Buffer.from(await encodeSnapshot(state)), Buffer.from(await encodeSnapshot(stepwise)), `seed ${seed}: ${how}: the snapshot`);
      }
      assert.equal(fresh.sequence, history.length);
      assert.equal(startFold(fresh).finish(), fresh, "a fold given nothing is the state it started from");
    }
  });

  it("R41: a slice no commit touched is the same object after evolve and after a draft fold; one a commit touched is a new one, frozen", () => {
    const head = evolve(initialState, commits.slice(0, 2000));
    const event: MeshEvent = { type: "NodeEnrolled", actor: "operator-test", commandId: "enrol-x", at: "2026-01-01T00:00:00.000Z", node: "node-x", publicKey: "k-x" };
    const step: SequencedCommit = { sequence: head.sequence + 1, commit: { commandId: "enrol-x", entity: { kind: "node", id: "node-x" }, events: [event] } };
    for (const next of [evolve(head, [step]), folded(head, [step], 1)]) {
      for (const slice of SLICE_ORDER) {
        if (slice === "nodes") assert.notEqual(next.nodes, head.nodes, "the nodes are new");
        else assert.equal(next[slice], head[slice], `${slice} is the same object`);
      }
      assert.equal(next.nodes.get("node-x")?.publicKey, "k-x");
      assert.equal(head.nodes.has("node-x"), false, "the state given is left as it was");
    }
    assert.ok(Object.isFrozen(evolve(head, [step]).nodes), "evolve's slices are frozen: nothing can change them in place");
  });

  it("R48: a draft fold and evolve agree over churning histories, removals of delivered nodes included", () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const churn: SequencedCommit[] = generateCommits({ seed, events: 4000, maxNodes: 12 }).map((commit, i) => ({ sequence: i + 1, commit }));
      let stepwise = initialState;
      let removedDelivered = 0;
      for (const step of churn) {
        for (const event of step.commit.events) {
          if (event.type !== "NodeRemoved") continue;
          if (everyCredential(stepwise.credentials).some((record) => record.deliveredTo?.includes(event.node))) removedDelivered += 1;
        }
        stepwise = evolve(stepwise, [step]);
      }
      assert.ok(removedDelivered > 0, `seed ${seed}: the history removes a node some credential was delivered to`);
      const fold = startFold(initialState);
      const third = Math.floor(churn.length / 3);
      fold.add(churn.slice(0, third));
      const resumed = startFold(fold.finish()); // a draft over a state that already has deliveries
      for (let i = third; i < churn.length; i += 97) resumed.add(churn.slice(i, i + 97));
      assert.equal(packed(resumed.finish()), packed(stepwise), `seed ${seed}`);
    }
  });

  it("R17: the nodes each module is assigned to, and the modules on each node, are what a plain model of assign, unassign and remove says, sorted, in every fold", () => {
    for (const seed of [9, 10]) {
      const churn: SequencedCommit[] = generateCommits({ seed, events: 4000, maxNodes: 12 }).map((commit, i) => ({ sequence: i + 1, commit }));
      const model = new Map<string, Set<string>>();
      let unassigned = 0;
      let removed = 0;
      for (const { commit } of churn) {
        for (const e of commit.events) {
          if (e.type === "ModuleAssigned") model.set(e.module, (model.get(e.module) ?? new Set()).add(e.node));
          if (e.type === "ModuleUnassigned" && model.get(e.module)?.delete(e.node)) unassigned += 1;
          if (e.type === "NodeRemoved") for (const nodes of model.values()) if (nodes.delete(e.node)) removed += 1;
        }
      }
      assert.ok(unassigned > 0 && removed > 0, `seed ${seed}: the history unassigns modules and removes assigned nodes`);
      const expected = Object.fromEntries([...model].filter(([, nodes]) => nodes.size > 0).map(([module, nodes]) => [module, [...nodes].sort()]));
      const copy = startFold(initialState);
      const share = startFold(evolve(initialState, churn.slice(0, 1)));
      copy.add(churn.slice(0, 1));
      for (let i = 1; i < churn.length; i += 113) {
        copy.add(churn.slice(i, i + 113));
        share.add(churn.slice(i, i + 113));
      }
      const byModule = (state: State) => Object.fromEntries(assignedModules(state.assignments).map(([module, nodes]) => [module, [...nodes]]));
      // The index by node (byNode, read by modulesOnNode) is the same model turned around.
      const expectedByNode: Record<string, string[]> = {};
      for (const [module, nodes] of Object.entries(expected)) for (const node of nodes) (expectedByNode[node] ??= []).push(module);
      for (const modules of Object.values(expectedByNode)) modules.sort();
      const byNode = (state: State) => Object.fromEntries([...state.assignments.byNode.keys()].map((node) => [node, modulesOnNode(state.assignments, node)]));
      let stepwise = initialState;
      for (const step of churn) stepwise = evolve(stepwise, [step]);
      const unpacked = unpackState(packState(copy.finish()));
      for (const [mode, state] of [["copy", copy.finish()], ["share", share.finish()], ["evolve", stepwise], ["unpacked", unpacked]] as const) {
        assert.deepEqual(byModule(state), expected, `seed ${seed}: ${mode}`);
        assert.deepEqual(byNode(state), expectedByNode, `seed ${seed}: ${mode}: the index by node`);
      }
    }
  });

  it("R48: each module's credential's deliveredTo is what a plain model of unassign, mint, rotate, revoke and remove says, sorted, in every fold and its index by node too; every provision's is sorted, has no node twice and is indexed by node", () => {
    for (const seed of [12, 13]) {
      const churn: SequencedCommit[] = generateCommits({ seed, events: 4000, maxNodes: 12 }).map((commit, i) => ({ sequence: i + 1, commit }));
      // principal key → the nodes its credential was delivered to (a module unassigned from them).
      const model = new Map<string, Set<string>>();
      let delivered = 0;
      for (const { commit } of churn) {
        for (const e of commit.events) {
          const key = (kind: string, name: string) => `${kind}:${name}`;
          if (e.type === "CredentialMinted" || e.type === "CredentialRotated") model.set(key(e.principal.kind, e.principal.name), new Set());
          if (e.type === "CredentialRevoked") model.delete(key(e.principal.kind, e.principal.name));
          const holder = e.type === "ModuleUnassigned" ? principalOfModule(e.module) : undefined;
          if (e.type === "ModuleUnassigned" && model.has(key(holder!.kind, holder!.name))) {
            model.get(key(holder!.kind, holder!.name))!.add(e.node);
            delivered += 1;
          }
          if (e.type === "NodeRemoved") {
            model.delete(key("node", e.node));
            for (const nodes of model.values()) nodes.delete(e.node);
          }
        }
      }
      assert.ok(delivered > 0, `seed ${seed}: the history unassigns modules that hold a credential`);
      const expected = Object.fromEntries([...model].filter(([, nodes]) => nodes.size > 0).map(([key, nodes]) => [key, [...nodes].sort()]));
      const copy = startFold(initialState);
      const share = startFold(evolve(initialState, churn.slice(0, 1)));
      copy.add(churn.slice(0, 1));
      let stepwise = evolve(initialState, churn.slice(0, 1));
      for (let i = 1; i < churn.length; i += 113) {
        copy.add(churn.slice(i, i + 113));
        share.add(churn.slice(i, i + 113));
        stepwise = evolve(stepwise, churn.slice(i, i + 113));
      }
      const deliveries = (state: State) => Object.fromEntries(everyCredential(state.credentials)
        .filter((record) => record.deliveredTo !== undefined)
        .map((record) => [`${record.principal.kind}:${record.principal.name}`, [...record.deliveredTo!]]));
      // The credentials' index by node (CredentialMap.delivered) is the same model turned around.
      const expectedByNode: Record<string, string[]> = {};
      for (const [key, nodes] of Object.entries(expected)) for (const node of nodes) (expectedByNode[node] ??= []).push(key);
      for (const keys of Object.values(expectedByNode)) keys.sort();
      const byNode = (state: State) => Object.fromEntries([...state.credentials.delivered]);
      const unpacked = unpackState(packState(stepwise));
      for (const [mode, state] of [["copy", copy.finish()], ["share", share.finish()], ["evolve", stepwise], ["unpacked", unpacked]] as const) {
        assert.deepEqual(deliveries(state), expected, `seed ${seed}: ${mode}`);
        assert.deepEqual(byNode(state), expectedByNode, `seed ${seed}: ${mode}: the index by node`);
        for (const record of everyProvision(state.provisions)) {
          const nodes = record.deliveredTo ?? [];
          assert.deepEqual(nodes, [...new Set(nodes)].sort(), `seed ${seed}: ${mode}: provision ${record.seat}/${record.provision}/${record.consumer}`);
        }
        // The provisions' index by node is their records' deliveredTo turned around.
        const provisionsByNode: Record<string, string[]> = {};
        for (const [key, record] of state.provisions) for (const node of record.deliveredTo ?? []) (provisionsByNode[node] ??= []).push(key);
        for (const keys of Object.values(provisionsByNode)) keys.sort();
        assert.deepEqual(Object.fromEntries([...state.provisions.delivered]), provisionsByNode, `seed ${seed}: ${mode}: the provisions' index by node`);
      }
      assert.ok(everyProvision(stepwise.provisions).some((record) => (record.deliveredTo?.length ?? 0) > 1), `seed ${seed}: some provision was delivered to more than one node`);
    }
  });

  it("R48: right after a node's removal, no credential's or provision's deliveredTo names it, nor does either index", () => {
    for (const seed of [12, 13]) {
      const churn: SequencedCommit[] = generateCommits({ seed, events: 4000, maxNodes: 12 }).map((commit, i) => ({ sequence: i + 1, commit }));
      let state = initialState;
      let checked = 0;
      for (const step of churn) {
        const before = state;
        state = evolve(state, [step]);
        for (const e of step.commit.events) {
          if (e.type !== "NodeRemoved") continue;
          const had = [...before.credentials.values(), ...before.provisions.values()].some((r) => r.deliveredTo?.includes(e.node));
          if (had) checked += 1;
          for (const record of [...state.credentials.values(), ...state.provisions.values()]) {
            assert.ok(!record.deliveredTo?.includes(e.node), `seed ${seed}: sequence ${step.sequence}: ${e.node} is still in a deliveredTo`);
          }
          assert.equal(state.credentials.delivered.get(e.node), undefined, `seed ${seed}: the credentials' index still names ${e.node}`);
          assert.equal(state.provisions.delivered.get(e.node), undefined, `seed ${seed}: the provisions' index still names ${e.node}`);
        }
      }
      assert.ok(checked > 0, `seed ${seed}: some removed node had been delivered something`);
    }
  });

  it("R48: evolve in batches that unassign and remove a node in the same batch agrees with evolve commit by commit", () => {
    for (const seed of [6, 7, 8]) {
      const churn: SequencedCommit[] = generateCommits({ seed, events: 3000, maxNodes: 10 }).map((commit, i) => ({ sequence: i + 1, commit }));
      let stepwise = initialState;
      for (const step of churn) stepwise = evolve(stepwise, [step]);
      let batched = initialState;
      let mixed = 0;
      for (let i = 0; i < churn.length; i += 37) {
        const batch = churn.slice(i, i + 37);
        const types = new Set(batch.flatMap((c) => c.commit.events.map((e) => e.type)));
        if (types.has("ModuleUnassigned") && types.has("NodeRemoved")) mixed += 1;
        batched = evolve(batched, batch);
      }
      assert.ok(mixed > 0, `seed ${seed}: some batch unassigns and removes nodes`);
      assert.equal(packed(batched), packed(stepwise), `seed ${seed}`);
    }
  });

  it("R31: a declaration sent to one node changes what was sent alone, and lastSent reads every node's", () => {
    const state = evolve(initialState, commits);
    const sentTo = (node: string, sequence: number): SequencedCommit => {
      const event: MeshEvent = { type: "DeclarationSent", actor: "operator-test", commandId: `sent-${sequence}`, at: "2026-01-01T00:00:00.000Z", node, digest: "b".repeat(64), recordsSequence: sequence };
      return { sequence, commit: { commandId: `sent-${sequence}`, entity: { kind: "node", id: node }, events: [event] } };
    };
    const next: State = evolve(state, [sentTo("node-new", state.sequence + 1)]);
    assert.equal(lastSent(next.sent, "node-new")?.recordsSequence, state.sequence + 1);
    assert.equal(lastSent(state.sent, "node-new"), undefined, "the state given is left as it was");
    assert.equal(next.nodes, state.nodes, "a slice the commit did not touch is shared");
    // Every node of the history reads back what its last DeclarationSent said.
    const last = new Map<string, number>();
    for (const { commit } of commits) {
      for (const e of commit.events) {
        if (e.type === "DeclarationSent") last.set(e.node, e.recordsSequence);
        if (e.type === "NodeRemoved") last.delete(e.node);
      }
    }
    assert.ok(last.size > 64, `the history sends to many nodes (${last.size})`);
    for (const [node, sequence] of last) assert.equal(lastSent(state.sent, node)?.recordsSequence, sequence, node);
    assert.equal(lastSent(state.sent, "toString"), undefined, "a name that is a property of every object is not a record");
  });

  it("R40: every applied command id is found with its commit's sequence, and no other", () => {
    const state = evolve(initialState, commits);
    for (const { sequence, commit } of commits) assert.equal(appliedSequence(state, commit.commandId), sequence);
    assert.equal(appliedSequence(state, "never-sent"), undefined);
  });

  it("R41: evolve and a draft fold leave every state they are given as it was, over a history with every event type", () => {
    const history: SequencedCommit[] = generateCommits({ seed: 21, events: 1200, maxNodes: 20 }).map((commit, i) => ({ sequence: i + 1, commit }));
    assert.deepEqual(new Set(history.flatMap(({ commit }) => commit.events.map((e) => e.type))), new Set(EVENT_TYPES), "every event type is in the history");
    let state = initialState;
    for (let i = 0; i < history.length; i += 1) {
      const given = packed(state);
      const batch = history.slice(i, i + 3); // a batch too: a fold changes its own copies in place, never the state given
      evolve(state, batch);
      const shared = startFold(state);
      shared.add(batch);
      shared.finish();
      const next = evolve(state, [history[i]!]);
      assert.equal(packed(state), given, `commit ${i + 1} (${history[i]!.commit.events.map((e) => e.type).join("+")}) changed the state it was given`);
      state = next;
    }
  });
});
