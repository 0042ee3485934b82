import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { decideVoid } from "../../../src/commands/replay.ts";
import { InvalidEvent } from "../../../src/records/errors.ts";
import { RECORDS_ENTITY, principalKey } from "../../../src/names.ts";
import { credentialAt, everyCredential, provisionsInKeyOrder, type State } from "../../../src/projections/index.ts";
import { fakeSecret } from "../../support/givenWhenThen.ts";

const busUserOf = (state: State, p: { kind: string; name: string }) => credentialAt(state.credentials, principalKey(p.kind as "operator", p.name))?.user;

const envelope = { commandId: "void-1", actor: "operator-ada", now: "2026-01-01T00:00:00.000Z", secrets: [] };
const held = { sequence: 35, types: ["NodeRenamed"] };

describe("replay --void (R45)", () => {
  it("R45: voids the commit the fold stopped at, naming its sequence, types and the reason", () => {
    const decision = decideVoid(held, { void: 35, reason: "rolled back" }, envelope);
    assert.ok(decision.ok && !decision.unchanged);
    assert.deepEqual(decision.entity, { ...RECORDS_ENTITY });
    assert.deepEqual(decision.events, [{ type: "CommitVoided", actor: "operator-ada", commandId: "void-1", at: envelope.now, sequence: 35, types: ["NodeRenamed"], reason: "rolled back" }]);
  });

  it("R45 R41: refuses a folded commit, another sequence than the held one, and a void without a reason", () => {
    const code = (d: ReturnType<typeof decideVoid>) => (d.ok ? "ok" : `${d.refusal.code}:${d.refusal.field ?? ""}`);
    assert.equal(code(decideVoid(null, { void: 3, reason: "x" }, envelope)), "not-voidable:void");
    assert.equal(code(decideVoid(held, { void: 34, reason: "x" }, envelope)), "not-voidable:void");
    assert.equal(code(decideVoid(held, { void: 35 }, envelope)), "invalid-request:reason");
  });

  it("R45: an invalid commit's error is one line naming its sequence, its event types and mesh replay --void", () => {
    const cause = new Error("line one\n[\n  {\"code\": \"invalid_union\"}\n]");
    const error = new InvalidEvent(35, { cause, types: ["NodeRenamed"] });
    assert.equal(error.message.includes("\n"), false);
    assert.deepEqual([error.sequence, error.types], [35, ["NodeRenamed"]]);
    assert.ok(error.message.includes("35") && error.message.includes("NodeRenamed") && error.message.includes("mesh replay --void 35"));
  });
});

describe("replay --accept-restore (R44)", () => {
  it("R44 R50: one commit: RecordsRestored (actor, evidence, lost range) and a fresh credential for every principal, the controller's and the asking operator's included", async () => {
    const { exampleMesh } = await import("../compose/exampleMesh.ts");
    const { restorePrincipals, restoreSecretsNeeded, decideAcceptRestore } = await import("../../../src/commands/replay.ts");
    const { state } = exampleMesh();
    const asker = everyCredential(state.credentials).find((c) => c.principal.kind === "operator")!.user;
    const principals = restorePrincipals(state);
    const all = everyCredential(state.credentials).length;
    assert.equal(principals.length, all, "every principal with a credential");
    assert.ok(principals.some((p) => p.kind === "controller" && p.name === "mesh-controller"), "the controller's too: its pre-restore password must not stay good (R50 switches it at the push)");
    assert.ok(principals.some((p) => p.kind === "operator" && busUserOf(state, p) === asker), "the asker's too: a password it rotated away after the backup is in the records (its reply carries the fresh one, R50)");
    const secrets = Array.from({ length: restoreSecretsNeeded(state) }, (_, i) => fakeSecret(i + 1));
    const evidence = [{ kind: "records-behind-mark", detail: "the records end at 40, the mark says 52" }];
    const decision = decideAcceptRestore(state, evidence, { from: 41, to: 52 }, { ...envelope, actor: asker, secrets });
    assert.ok(decision.ok && !decision.unchanged);
    assert.deepEqual(decision.entity, { ...RECORDS_ENTITY });
    assert.deepEqual(decision.events[0], { type: "RecordsRestored", actor: asker, commandId: "void-1", at: envelope.now, evidence, lost: { from: 41, to: 52 } });
    const rotated = decision.events.slice(1).filter((e) => e.type === "CredentialRotated");
    // R64: a node's key is its own; without a report of the list the bus ran, nodes keep theirs.
    const minted = principals.map((p, i) => ({ p, s: secrets[i]! })).filter(({ p }) => p.kind !== "node");
    assert.ok(minted.length < principals.length, "the example has nodes");
    assert.deepEqual(rotated.map((e) => e.type === "CredentialRotated" && `${e.principal.kind}:${e.principal.name}`), minted.map(({ p }) => `${p.kind}:${p.name}`));
    assert.deepEqual(rotated.map((e) => e.type === "CredentialRotated" && e.nkey), minted.map(({ s }) => s.nkey));
  });

  it("R44 R64: a node's key after a restore is the one the list the bus ran holds: a different one is taken, a missing node is revoked, the same key is left alone", async () => {
    const { exampleMesh } = await import("../compose/exampleMesh.ts");
    const { restoreSecretsNeeded, decideAcceptRestore } = await import("../../../src/commands/replay.ts");
    const { nodeNkeyOf } = await import("../../support/givenWhenThen.ts");
    const { state } = exampleMesh();
    const secrets = Array.from({ length: restoreSecretsNeeded(state) }, (_, i) => fakeSecret(i + 1));
    const key = (node: string) => credentialAt(state.credentials, principalKey("node", node))!.nkey!;
    const rotatedAway = nodeNkeyOf("alpha, rotated after the backup");
    // The bus ran alpha on a key it rotated to after the backup, beta on the backup's key, and no gamma (removed after it).
    const installed = { "node-alpha": rotatedAway, "node-beta": key("beta") };
    const decision = decideAcceptRestore(state, [], null, { ...envelope, secrets }, installed);
    assert.ok(decision.ok && !decision.unchanged);
    const nodeEvents = decision.events.filter((e) => (e.type === "CredentialRotated" || e.type === "CredentialRevoked") && e.principal.kind === "node");
    assert.deepEqual(nodeEvents.map((e) => [e.type, e.type === "CredentialRotated" || e.type === "CredentialRevoked" ? e.principal.name : ""]), [
      ["CredentialRotated", "alpha"], ["CredentialRevoked", "gamma"],
    ]);
    const alpha = nodeEvents[0]!;
    assert.ok(alpha.type === "CredentialRotated");
    assert.equal(alpha.nkey, rotatedAway, "the backup's key for alpha is on no list again");
    assert.equal(alpha.sealed, undefined, "no secret recorded for a node");
  });
});

describe("replay --accept-restore and provisions (R44)", () => {
  it("R44: the accepting commit gives every minted provision a fresh secret too, after the principals' (the next push delivers it to both sides)", async () => {
    const { exampleMesh } = await import("../compose/exampleMesh.ts");
    const { restorePrincipals, restoreSecretsNeeded, decideAcceptRestore } = await import("../../../src/commands/replay.ts");
    const { state } = exampleMesh();
    const provisions = provisionsInKeyOrder(state.provisions);
    assert.ok(provisions.length > 0, "the example mesh has a provision");
    const principals = restorePrincipals(state).length;
    assert.equal(restoreSecretsNeeded(state), principals + provisions.length);
    const secrets = Array.from({ length: restoreSecretsNeeded(state) }, (_, i) => fakeSecret(i + 1));
    const decision = decideAcceptRestore(state, [], null, { ...envelope, secrets });
    assert.ok(decision.ok && !decision.unchanged);
    const rotated = decision.events.filter((e) => e.type === "ProvisionRotated");
    assert.deepEqual(rotated.map((e) => e.type === "ProvisionRotated" && [e.seat, e.provision, e.consumer, e.user, e.sealed]),
      provisions.map((p, i) => [p.seat, p.provision, p.consumer, p.user, fakeSecret(principals + i + 1).sealed]));
  });
});

describe("replay --accept-restore and the genesis bootstrap key (R13, R44, R63)", () => {
  it("R44 R63: a node the bus ran on the genesis bootstrap key, or recorded on it, is revoked: its seed is public in the source", async () => {
    const { exampleMesh } = await import("../compose/exampleMesh.ts");
    const { restoreSecretsNeeded, decideAcceptRestore } = await import("../../../src/commands/replay.ts");
    const { BOOTSTRAP_NKEY } = await import("../../../src/genesis.ts");
    const { evolve } = await import("../../../src/projections/index.ts");
    const { state: example } = exampleMesh();
    // beta enrolled on the bootstrap key before decides refused it (the records hold it).
    const state = evolve(example, [{ sequence: example.sequence + 1, commit: { commandId: "old", entity: { kind: "node", id: "beta" }, events: [
      { type: "CredentialRotated", actor: "operator-ada", commandId: "old", at: "2026-01-01T00:00:00.000Z", principal: { kind: "node", name: "beta" }, user: "node-beta", nkey: BOOTSTRAP_NKEY, address: "tls://bus.example.net:4222" },
    ] } }]);
    const key = (node: string) => credentialAt(state.credentials, principalKey("node", node))!.nkey!;
    const secrets = Array.from({ length: restoreSecretsNeeded(state) }, (_, i) => fakeSecret(i + 1));
    for (const installed of [{ "node-alpha": BOOTSTRAP_NKEY, "node-beta": BOOTSTRAP_NKEY, "node-gamma": key("gamma") }, undefined]) {
      const decision = decideAcceptRestore(state, [], null, { ...envelope, secrets }, installed);
      assert.ok(decision.ok && !decision.unchanged);
      const revoked = decision.events.flatMap((e) => (e.type === "CredentialRevoked" ? [e.principal.name] : []));
      assert.deepEqual(revoked, installed ? ["alpha", "beta"] : ["beta"], JSON.stringify(installed));
      assert.ok(!decision.events.some((e) => e.type === "CredentialRotated" && e.nkey === BOOTSTRAP_NKEY), "nobody is rotated onto it");
    }
  });
});

describe("replay --accept-restore at scale (R44, R59)", () => {
  it("R44: later batches rotate the principals that still have a credential, and nothing when none has", async () => {
    const { exampleMesh } = await import("../compose/exampleMesh.ts");
    const { restorePrincipals, decideRestoreRotations, ROTATIONS_PER_COMMIT } = await import("../../../src/commands/replay.ts");
    assert.ok(ROTATIONS_PER_COMMIT * 400 < 1024 * 1024, "a batch stays under the bus's 1 MiB message limit");
    const { state } = exampleMesh();
    const some = restorePrincipals(state).slice(0, 2);
    const gone = { kind: "node" as const, name: "gone" };
    const secrets = [1, 2, 3].map(fakeSecret);
    const decision = decideRestoreRotations(state, [some[0]!, gone, some[1]!], { ...envelope, secrets });
    assert.ok(decision.ok && !decision.unchanged);
    assert.deepEqual(decision.events.map((e) => e.type === "CredentialRotated" && e.principal.name), [some[0]!.name, some[1]!.name]);
    const none = decideRestoreRotations(state, [gone], { ...envelope, secrets });
    assert.ok(none.ok && none.unchanged === true);
  });
});

describe("replay --accept-restore: principals the records hold and the installed list does not (R44)", () => {
  it("R44: names each user the records' list holds that the broker's installed list lacks (removed after the backup, or never pushed), never the asker or the controller (both are on the bus), and nothing when no list was reported", async () => {
    const { absentFromInstalledList } = await import("../../../src/commands/replay.ts");
    const records = [
      { user: "mesh-controller", principal: { kind: "controller" as const, name: "mesh-controller" } },
      { user: "node-old1", principal: { kind: "node" as const, name: "old1" } },
      { user: "node-vm", principal: { kind: "node" as const, name: "vm" } },
      { user: "module-web", principal: { kind: "module" as const, name: "web" } },
      { user: "operator-ada", principal: { kind: "operator" as const, name: "ada" } },
    ];
    assert.deepEqual(absentFromInstalledList(records, ["node-vm", "node-late"], "operator-ada"), [
      { kind: "module", name: "web", user: "module-web" },
      { kind: "node", name: "old1", user: "node-old1" },
    ]);
    assert.deepEqual(absentFromInstalledList(records, records.map((r) => r.user), "operator-ada"), []);
    assert.deepEqual(absentFromInstalledList(records, undefined, "operator-ada"), [], "no report: no evidence either way");
  });
});
