import { describe, it } from "node:test";
import { createHash } from "node:crypto";
import assert from "node:assert/strict";
import { composeBusUsers, composeDeclarations, openOverlaps, overlapEnded, overlapNodes, overlapsOfList, renderUserList, type OverlapReport } from "../../../src/compose/index.ts";
import { composeRemembered, newCompositionMemo } from "../../../src/push/composition.ts";
import { credentialNote } from "../../../src/compose/index.ts";
import { renderGrants } from "../../../src/cli/explain.ts";
import { readOverlapReports } from "../../../src/push/reports.ts";
import { fakeReports } from "../../support/fakeReports.ts";
import { credentialOf } from "../../../src/projections/index.ts";
import { busUser } from "../../../src/names.ts";
import { BOOTSTRAP_NKEY } from "../../../src/genesis.ts";
import { readUserList } from "../../../installer/carried.ts";
import { keysOfListText } from "../../../src/host/declaration.ts";
import { EXAMPLE_CONFIG, MeshBuilder, manifests } from "./exampleMesh.ts";

const NEW_KEY = `U${"NEWKEY".padEnd(55, "A")}`;
const OTHER_KEY = `U${"OTHERKEY".padEnd(55, "A")}`;
const SHOWCASE = busUser("module", "showcase");
const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");

/** The rotation of module `name` onto `nkey`, as `credential rotate module <name>` decides it (R73: with overlap). */
function rotation(name: string, nkey: string, overlap = true): Record<string, unknown> & { type: "CredentialRotated" } {
  return { type: "CredentialRotated", principal: { kind: "module", name }, user: busUser("module", name), nkey, sealed: `sealed:${nkey}`, address: "tls://bus.example.net:4222", ...(overlap ? { overlap: true } : {}) };
}

/** A mesh: controller, nodes alpha (broker) and gamma (showcase, issued and assigned). */
function mesh(): MeshBuilder {
  return new MeshBuilder().genesis().controller().node("alpha").node("gamma")
    .register(manifests.broker).register(manifests["build-machine"]).register(manifests["git-server"]).register(manifests.showcase)
    .issue("broker").assign("broker", "alpha").issue("showcase").assign("showcase", "gamma");
}

/** Sequence of the builder's last commit. */
function lastSequence(b: MeshBuilder): number {
  return b.commits.length;
}

describe("R73: overlapEnded, a node's report against a module's rotation", () => {
  const rotated = { rotatedAt: 10, nkey: NEW_KEY };
  const applied = (recordsSequence: number | undefined, extra: Partial<OverlapReport> = {}): OverlapReport => ({ ok: true, recordsSequence, ...extra });

  it("R73: no report, a failed one, or one without a records sequence keeps the overlap", () => {
    assert.equal(overlapEnded(undefined, "showcase", rotated), false);
    assert.equal(overlapEnded(null, "showcase", rotated), false);
    assert.equal(overlapEnded({ ok: false, recordsSequence: 12 }, "showcase", rotated), false);
    assert.equal(overlapEnded(applied(undefined), "showcase", rotated), false);
  });

  it("R73: a declaration composed before the rotation keeps it; one at or past it ends it when the report carries no run state", () => {
    assert.equal(overlapEnded(applied(9), "showcase", rotated), false);
    assert.equal(overlapEnded(applied(10), "showcase", rotated), true);
    assert.equal(overlapEnded(applied(11), "showcase", rotated), true);
  });

  it("R73: with run states, a live module ends it only when it runs with the new key", () => {
    for (const state of ["running", "starting", "stopping"]) {
      assert.equal(overlapEnded(applied(11, { modules: [{ module: "showcase", state, startedWithNkey: NEW_KEY }] }), "showcase", rotated), true, state);
      assert.equal(overlapEnded(applied(11, { modules: [{ module: "showcase", state, startedWithNkey: OTHER_KEY }] }), "showcase", rotated), false, state);
      assert.equal(overlapEnded(applied(11, { modules: [{ module: "showcase", state }] }), "showcase", rotated), false, `${state} without a key`);
      assert.equal(overlapEnded(applied(9, { modules: [{ module: "showcase", state, startedWithNkey: NEW_KEY }] }), "showcase", rotated), false, `${state}, env older`);
    }
  });

  it("R73: a module exited, without a runtime, or not run by the agent: the new env applied is enough", () => {
    for (const modules of [[{ module: "showcase", state: "exited", startedWithNkey: OTHER_KEY }], [{ module: "showcase", state: "runtime-missing" }], [{ module: "showcase", state: "not-run" }], [], [{ module: "other", state: "running", startedWithNkey: OTHER_KEY }]]) {
      assert.equal(overlapEnded(applied(10, { modules }), "showcase", rotated), true, JSON.stringify(modules));
      assert.equal(overlapEnded(applied(9, { modules }), "showcase", rotated), false, JSON.stringify(modules));
    }
  });

  it("R73: run states of a shape this release cannot read keep the overlap (never a guess that cuts a module off)", () => {
    for (const modules of [null, {}, "running", { showcase: { state: "running" } }, ["running"], [{ module: "showcase", state: 1 }], [{ state: "running" }], [{ module: "showcase", state: "running", startedWithNkey: 7 }]]) {
      assert.equal(overlapEnded(applied(11, { modules }), "showcase", rotated), false, JSON.stringify(modules));
    }
    // An inherited name is no entry.
    assert.equal(overlapEnded(applied(11, { modules: [] }), "toString", rotated), true);
  });
});

describe("R73: the records keep a rotated module's previous key", () => {
  it("R73: a module's rotation with overlap keeps the key it replaced and the rotation's sequence; one without does not", () => {
    const b = mesh();
    const before = credentialOf(b.state().credentials, { kind: "module", name: "showcase" })!.nkey!;
    b.commit("module", "showcase", rotation("showcase", NEW_KEY));
    const after = credentialOf(b.state().credentials, { kind: "module", name: "showcase" })!;
    assert.equal(after.nkey, NEW_KEY);
    assert.deepEqual(after.previous, { nkey: before, rotatedAt: lastSequence(b) });
    b.commit("module", "showcase", rotation("showcase", OTHER_KEY, false));
    assert.equal(credentialOf(b.state().credentials, { kind: "module", name: "showcase" })!.previous, undefined, "a rotation that must end the old key at once (R44, R48)");
  });

  it("R73 R66: a second rotation keeps only the key it replaced: the one before is never admitted again", () => {
    const b = mesh().commit("module", "showcase", rotation("showcase", NEW_KEY)).commit("module", "showcase", rotation("showcase", OTHER_KEY));
    const record = credentialOf(b.state().credentials, { kind: "module", name: "showcase" })!;
    assert.deepEqual(record.previous, { nkey: NEW_KEY, rotatedAt: lastSequence(b) });
    const list = composeBusUsers(b.state(), EXAMPLE_CONFIG);
    assert.ok(list.ok);
    assert.deepEqual(list.users.filter((u) => u.user === SHOWCASE).map((u) => u.nkey), [NEW_KEY, OTHER_KEY]);
  });

  it("R73 R48: a node's removal rotates the module without overlap: its previous key goes", () => {
    const b = mesh().commit("module", "showcase", rotation("showcase", NEW_KEY))
      .commit("node", "gamma", { type: "NodeRemoved", node: "gamma" }, rotation("showcase", OTHER_KEY, false));
    assert.equal(credentialOf(b.state().credentials, { kind: "module", name: "showcase" })!.previous, undefined);
    assert.deepEqual(overlapNodes(b.state()), []);
  });
});

describe("R73: the composed user list before, during and after the overlap", () => {
  it("R73: before the rotation the module is one user; during it the previous key is a second user of the same name and exactly the same permissions", () => {
    const b = mesh();
    const old = credentialOf(b.state().credentials, { kind: "module", name: "showcase" })!.nkey!;
    const before = composeBusUsers(b.state(), EXAMPLE_CONFIG);
    assert.ok(before.ok);
    assert.deepEqual(before.users.filter((u) => u.user === SHOWCASE).map((u) => u.nkey), [old]);
    b.commit("module", "showcase", rotation("showcase", NEW_KEY));
    const state = b.state();
    assert.deepEqual(overlapNodes(state), ["gamma"]);
    const during = composeBusUsers(state, EXAMPLE_CONFIG, new Map([["gamma", { ok: true, recordsSequence: lastSequence(b) - 1 }]]));
    assert.ok(during.ok);
    const mine = during.users.filter((u) => u.user === SHOWCASE);
    assert.deepEqual(mine.map((u) => u.nkey), [old, NEW_KEY], "the previous key first, the current last (a reader by name keeps the current)");
    assert.deepEqual(mine[0]!.permissions, mine[1]!.permissions);
    assert.deepEqual(mine[0]!.overlap, { rotatedAt: lastSequence(b), until: ["gamma"] });
    assert.equal(mine[1]!.overlap, undefined);
    const text = renderUserList(during);
    assert.match(text, /# R73: the previous key of module-showcase, admitted until gamma report\(s\) the new one/);
    assert.deepEqual(readUserList(text).filter((u) => u.user === SHOWCASE).map((u) => u.nkey), [old, NEW_KEY], "the installer's reader reads both lines");
    assert.equal(keysOfListText(text)[SHOWCASE], NEW_KEY, "the host's key by name is the current one (R44)");
    assert.deepEqual(openOverlaps(state, undefined), ["module:showcase"], "without reports every overlap holds");
  });

  it("R73: once the module's node reports the new env applied, the list drops the previous key and its text changes", () => {
    const b = mesh().commit("module", "showcase", rotation("showcase", NEW_KEY));
    const state = b.state();
    const during = composeDeclarations(state, EXAMPLE_CONFIG, sha256, new Map([["gamma", null]]));
    const after = composeDeclarations(state, EXAMPLE_CONFIG, sha256, new Map([["gamma", { ok: true, recordsSequence: state.sequence }]]));
    assert.ok(after.users.ok && during.users.ok);
    assert.deepEqual(after.users.users.filter((u) => u.user === SHOWCASE).map((u) => u.nkey), [NEW_KEY]);
    const holder = (c: typeof after) => c.declarations.find((d) => d.ok && d.declaration.node === "alpha");
    const [a, d] = [holder(after), holder(during)];
    assert.ok(a?.ok && d?.ok);
    assert.notEqual(a.declaration.digest, d.declaration.digest, "the broker's holder is behind: the next push sends it the list without the old key");
    assert.deepEqual(openOverlaps(state, new Map([["gamma", { ok: true, recordsSequence: state.sequence }]])), []);
  });

  it("R73: a module on two nodes keeps the overlap until both report; one assigned nowhere admits no previous key", () => {
    const b = mesh().assign("showcase", "alpha").commit("module", "showcase", rotation("showcase", NEW_KEY));
    const s = b.state().sequence;
    assert.deepEqual(overlapNodes(b.state()), ["alpha", "gamma"]);
    const count = (reports: Map<string, OverlapReport | null>) => {
      const list = composeBusUsers(b.state(), EXAMPLE_CONFIG, reports);
      assert.ok(list.ok);
      return list.users.filter((u) => u.user === SHOWCASE).length;
    };
    assert.equal(count(new Map([["gamma", { ok: true, recordsSequence: s }]])), 2);
    assert.equal(count(new Map([["gamma", { ok: true, recordsSequence: s }], ["alpha", { ok: true, recordsSequence: s - 1 }]])), 2);
    assert.equal(count(new Map([["gamma", { ok: true, recordsSequence: s }], ["alpha", { ok: true, recordsSequence: s }]])), 1);
    b.commit("module", "showcase", { type: "ModuleUnassigned", module: "showcase", node: "alpha" }, { type: "ModuleUnassigned", module: "showcase", node: "gamma" });
    assert.equal(count(new Map()), 1);
    assert.deepEqual(overlapNodes(b.state()), []);
  });

  it("R73 R13: a previous key that is the genesis bootstrap key is never admitted", () => {
    const b = mesh().commit("module", "showcase", rotation("showcase", BOOTSTRAP_NKEY, false)).commit("module", "showcase", rotation("showcase", NEW_KEY));
    assert.equal(credentialOf(b.state().credentials, { kind: "module", name: "showcase" })!.previous?.nkey, BOOTSTRAP_NKEY);
    const list = composeBusUsers(b.state(), EXAMPLE_CONFIG);
    assert.ok(list.ok);
    assert.deepEqual(list.users.filter((u) => u.user === SHOWCASE).map((u) => u.nkey), [NEW_KEY]);
  });
});

describe("R73: a push's composition and report of the overlap", () => {
  it("R73: the push's remembered composition follows the reports: the same overlaps reuse it, an ended one composes again", () => {
    const b = mesh().commit("module", "showcase", rotation("showcase", NEW_KEY));
    const state = b.state();
    const memo = newCompositionMemo();
    const during = composeRemembered(memo, state, EXAMPLE_CONFIG, new Map([["gamma", null]]));
    assert.equal(composeRemembered(memo, state, EXAMPLE_CONFIG, new Map([["gamma", { ok: true, recordsSequence: state.sequence - 1 }]])), during, "another report, the same overlaps: remembered");
    const after = composeRemembered(memo, state, EXAMPLE_CONFIG, new Map([["gamma", { ok: true, recordsSequence: state.sequence }]]));
    assert.notEqual(after, during);
    assert.deepEqual(overlapsOfList(during.users), [{ principal: { kind: "module", name: "showcase" }, until: ["gamma"] }]);
    assert.deepEqual(overlapsOfList(after.users), []);
  });
});

describe("R73: explain shows the overlap", () => {
  it("R73: a rotated module's explain names the nodes whose report ends its old key's admission; before the rotation it names none", () => {
    const b = mesh();
    const principal = { kind: "module" as const, name: "showcase" };
    assert.equal(credentialNote(b.state(), principal).previousKeyUntil, undefined);
    b.commit("module", "showcase", rotation("showcase", NEW_KEY));
    const note = credentialNote(b.state(), principal);
    assert.deepEqual(note.previousKeyUntil, ["gamma"]);
    const lines = renderGrants({ principal, user: SHOWCASE, grants: [], responder: false, onTheBus: true, ...note });
    assert.ok(lines.some((l) => /the key it replaced keeps these grants until gamma reports the new one applied; the push after that drops it \(R73/.test(l)), lines.join("\n"));
  });
});

describe("R73: the reports a push reads for the overlap", () => {
  it("R73: it reads the last report of each node of a rotated module alone, with the records sequence and run states overlapEnded reads", async () => {
    const b = mesh();
    const stored = {
      gamma: { v: 1, node: "gamma", digest: "d1", ok: true, recordsSequence: 40, modules: [{ module: "showcase", state: "running", startedWithNkey: NEW_KEY }] },
      alpha: { v: 1, node: "alpha", digest: "d2", ok: true, recordsSequence: 41 },
    };
    assert.equal((await readOverlapReports(fakeReports(stored), b.state())).size, 0, "no rotation: nothing to read");
    b.commit("module", "showcase", rotation("showcase", NEW_KEY));
    const read = await readOverlapReports(fakeReports(stored), b.state());
    assert.deepEqual([...read.keys()], ["gamma"]);
    assert.deepEqual(read.get("gamma"), { digest: "d1", ok: true, recordsSequence: 40, modules: [{ module: "showcase", state: "running", restarts: 0, startedWithNkey: NEW_KEY }] });
    assert.equal(overlapEnded(read.get("gamma"), "showcase", { rotatedAt: b.state().sequence, nkey: NEW_KEY }), true);
    const forged = await readOverlapReports(fakeReports({ gamma: { ...stored.gamma, node: "alpha" } }), b.state());
    assert.equal(forged.get("gamma"), null, "a body naming another node is no report of gamma's");
  });
});
