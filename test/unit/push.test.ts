import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { composeRemembered, newCompositionMemo, redactDeclaration, sha256 } from "../../src/push/composition.ts";
import { sealForNode, splitUserList, userListPartHeaders, userListParts } from "../../src/push/publish.ts";
import { userListUndelivered } from "../../src/push/push.ts";
import { composeDeclarations } from "../../src/compose/declaration.ts";
import { evolve, initialState, startFold, type SequencedCommit, type State } from "../../src/projections/index.ts";
import { generateCommits } from "../support/history.ts";
import { EXAMPLE_CONFIG, MeshBuilder, exampleMesh } from "./compose/exampleMesh.ts";
import { controllerCredential, pendingCredentialFile, pendingPassword } from "../../src/controller/credential.ts";
import { GENESIS, enrolment, registration, stateOf } from "../support/givenWhenThen.ts";
import { USER_LIST_PART_BYTES, userListPartCount } from "../../src/compose/declaration.ts";
import { moduleEnvironment } from "../../src/compose/environment.ts";
import { USER_LIST_DIGEST_HEADER, USER_LIST_PART_HEADER, progressSubject } from "../../src/names.ts";
import { isInInboxOf, pushVerb, unknownNamedNodes } from "../../src/push/pushCommand.ts";
import type { PushReport } from "../../src/push/push.ts";
import type { Declaration } from "../../src/compose/declaration.ts";
import { newMeshKey, newNodeKeyPair, openAsNode, sealWithMeshKey } from "../../src/crypto/secrets.ts";
import { askShell } from "../support/shellVerb.ts";

const meshKey = newMeshKey();
const secret = "module-password-never-printed";
const declaration = (): Declaration => ({
  node: "alpha",
  self: { address: "tls://bus:4222", user: "node-alpha", nkey: `U${"A".repeat(55)}`, fingerprint: "AB" },
  modules: [{
    module: "web", version: "1", run: {},
    credential: { address: "tls://bus:4222", user: "module-web", sealed: sealWithMeshKey(meshKey, secret), fingerprint: "AB" },
    env: moduleEnvironment(stateOf([]), "web", "tls://bus:4222", "module-web", "AB"),
    provisions: [{ seat: "mesh-store", provision: "database", user: "web", sealed: sealWithMeshKey(meshKey, "db-secret") }],
  }],
  provisions: [],
  userList: { digest: "e".repeat(64), bytes: 120, parts: 1 },
  digest: "d".repeat(64),
});

describe("push helpers", () => {
  it("R3: a dry run's declaration has every secret redacted and names the user list without carrying it", () => {
    const text = JSON.stringify(redactDeclaration(declaration()));
    assert.match(text, /"userList":\{"digest":"e{64}","bytes":120,"parts":1\}/);
    assert.doesNotMatch(text, /"sealed":"(?!\[redacted\])/);
    assert.match(text, /\[redacted\]/);
  });

  it("R3: secrets are re-sealed to the node's key; the digest and the mesh-key form are untouched", () => {
    const keys = newNodeKeyPair();
    const original = declaration();
    const cache = new Map<string, string>();
    const sent = sealForNode(original, keys.publicKey, meshKey, new Map(), cache);
    assert.equal(sent.digest, original.digest);
    assert.equal(openAsNode(keys.privateKey, sent.modules[0]!.credential.sealed), secret);
    assert.equal(openAsNode(keys.privateKey, sent.modules[0]!.provisions[0]!.sealed), "db-secret");
    assert.deepEqual(sent.self, original.self, "R64: the node's own credential holds no secret: sent as composed");
    assert.notEqual(sent.modules[0]!.credential.sealed, original.modules[0]!.credential.sealed);
    // A second push reuses the node-sealed form of an unchanged secret.
    const again = sealForNode(original, keys.publicKey, meshKey, new Map(), cache);
    assert.equal(again.modules[0]!.credential.sealed, sent.modules[0]!.credential.sealed);
    // Another node gets its own.
    const other = newNodeKeyPair();
    const theirs = sealForNode(original, other.publicKey, meshKey, new Map(), cache);
    assert.throws(() => openAsNode(keys.privateKey, theirs.modules[0]!.credential.sealed));
  });

  it("R11: sha256 is the digest of a text's UTF-8 bytes, short or long, ASCII or not (a long ASCII text is hashed as latin1)", () => {
    const long = 64 * 1024 + 1;
    const texts = ["", "short", "é and 😀", "a".repeat(long), `${"a".repeat(long)}é`, `${"a".repeat(long)}\u0080`, `${"a".repeat(long)}😀`, `${"a".repeat(long)}\ud800`, "\u00ff".repeat(long)];
    for (const text of texts) assert.equal(sha256(text), createHash("sha256").update(Buffer.from(text, "utf8")).digest("hex"), `${text.length} code units ending ${JSON.stringify(text.slice(-2))}`);
  });

  it("R11: a user list is cut into parts of USER_LIST_PART_BYTES that join to its bytes, each with its digest and index", () => {
    const text = `${"é".repeat(USER_LIST_PART_BYTES)}tail`; // 2 bytes a character: parts split inside one
    const bytes = Buffer.byteLength(text, "utf8");
    const parts = splitUserList(text);
    assert.equal(parts.length, userListPartCount(bytes));
    assert.equal(parts.length, 3);
    assert.ok(parts.every((p) => p.length <= USER_LIST_PART_BYTES));
    assert.equal(Buffer.concat(parts).toString("utf8"), text);
    assert.deepEqual(splitUserList("").map((p) => p.length), [0]);
    const digest = createHash("sha256").update(text).digest("hex");
    assert.equal(userListParts(text, { digest, bytes, parts: 3 }).parts.length, 3);
    assert.throws(() => userListParts(text, { digest, bytes, parts: 2 }));
    const h = userListPartHeaders(digest, 2, 3);
    assert.equal(h.get(USER_LIST_DIGEST_HEADER), digest);
    assert.equal(h.get(USER_LIST_PART_HEADER), "2/3");
  });
});

describe("push verb progress", () => {
  const log = { info: () => undefined, error: () => undefined };
  const report = { pushId: "p", dryRun: false, nodes: [] } as unknown as PushReport;

  it("R33: publishes progress lines only into the asker's own inbox", async () => {
    const published: Array<[string, string]> = [];
    const verb = pushVerb(async (options) => { options.progress?.(1, 1); return report; }, log, (subject, line) => { published.push([subject, line]); });
    const mine = progressSubject("operator-admin", "abc");
    const reply = await askShell("push", verb, { wait: true, progressSubject: mine }, "operator-admin");
    assert.equal(reply.ok, true);
    assert.ok(published.length >= 2 && published.every(([subject]) => subject === mine), JSON.stringify(published));
    assert.ok(published.some(([, line]) => line.startsWith("sent 1 of 1")));
  });

  it("R33: refuses a progress subject in another principal's inbox, or a wildcard, and runs nothing", async () => {
    let ran = 0;
    const published: string[] = [];
    const verb = pushVerb(async () => { ran += 1; return report; }, log, (subject) => { published.push(subject); });
    for (const subject of [progressSubject("operator-eve", "x"), "_INBOX_operator-admin", "_INBOX_operator-admin2.progress.x", "_INBOX_operator-admin.>"]) {
      const reply = await askShell("push", verb, { progressSubject: subject }, "operator-admin");
      assert.equal(reply.ok, false, subject);
      assert.equal(!reply.ok && reply.error.code, "invalid-request", subject);
    }
    assert.equal(ran, 0);
    assert.deepEqual(published, []);
    assert.equal(isInInboxOf("operator-admin", progressSubject("operator-admin", "x")), true);
  });
});

describe("push verb: named nodes must be enrolled (R31)", () => {
  const log = { info: () => undefined, error: () => undefined };
  const report = { pushId: "p", dryRun: false, nodes: [] } as unknown as PushReport;

  it("R31: a named node that is not enrolled is refused unknown-node on field nodes, naming it, and the push never runs", async () => {
    let ran = 0;
    const verb = pushVerb(async () => { ran += 1; return report; }, log, undefined, async () => new Map(Object.entries({ alpha: { name: "alpha", publicKey: "k1", enrolledAt: "t" }, beta: { name: "beta", publicKey: "k2", enrolledAt: "t" } })));
    const reply = await askShell("push", verb, { nodes: ["alpha", "wbe1", "wbe1"] }, "operator-admin");
    assert.equal(reply.ok, false);
    assert.deepEqual(!reply.ok && [reply.error.code, reply.error.field], ["unknown-node", "nodes"]);
    assert.ok(!reply.ok && reply.error.message.includes("wbe1"));
    assert.equal(ran, 0);
    assert.equal((await askShell("push", verb, { nodes: ["alpha"] }, "operator-admin")).ok, true);
    assert.equal((await askShell("push", verb, {}, "operator-admin")).ok, true, "a push naming nobody needs no check");
    assert.equal(ran, 2);
    assert.equal(unknownNamedNodes(["constructor"], new Map())?.code, "unknown-node", "an inherited property is no node");
  });
});

describe("userListUndelivered (R49)", () => {
  const broker = { name: "broker", version: "1", seats: { "mesh-broker": { protocol: "nats" } }, claims: ["mesh-broker"] };
  const held = stateOf([GENESIS, ...enrolment("alpha"), ...enrolment("beta"), registration(broker), { type: "ModuleAssigned", module: "broker", node: "alpha" }]);

  it("R49: nothing holds mesh-broker: no-broker-holder, whatever was sent", () => {
    const none = stateOf([GENESIS, ...enrolment("alpha")]);
    assert.equal(userListUndelivered(none, [{ node: "alpha", outcome: "sent" }])?.code, "no-broker-holder");
  });

  it("R49: the holder's declaration refused or failed: user-list-undelivered; sent, applied, unchanged or awaited: delivered", () => {
    for (const outcome of ["refused", "failed"] as const) {
      assert.equal(userListUndelivered(held, [{ node: "alpha", outcome }, { node: "beta", outcome: "sent" }])?.code, "user-list-undelivered", outcome);
    }
    assert.equal(userListUndelivered(held, [{ node: "beta", outcome: "sent" }])?.code, "user-list-undelivered", "a holder missing from the report");
    for (const outcome of ["sent", "applied", "unchanged", "timed-out"] as const) {
      assert.equal(userListUndelivered(held, [{ node: "alpha", outcome }]), null, outcome);
    }
  });
});

describe("ControllerCredential while a rotation is pending (R50)", () => {
  it("R50: a staged password is kept beside the file, reconnects try it and the previous one in turn, and commit writes it into the file", () => {
    const dir = mkdtempSync(join(tmpdir(), "mesh-credential-"));
    try {
      const file = join(dir, "controller.json");
      const initial = { address: "tls://127.0.0.1:4222", user: "controller-mesh-controller", password: "old-password" };
      writeFileSync(file, JSON.stringify(initial), { mode: 0o600 });
      const credential = controllerCredential(initial, file);
      assert.equal(credential.dialPassword(), "old-password");
      credential.stage("new-password");
      assert.equal(credential.pending(), true);
      assert.equal(pendingPassword(file, initial.user), "new-password", "a restart finds it");
      assert.deepEqual([1, 2, 3, 4].map(() => credential.dialPassword()), ["new-password", "old-password", "new-password", "old-password"]);
      credential.commit();
      assert.equal(credential.pending(), false);
      assert.equal(JSON.parse(readFileSync(file, "utf8")).password, "new-password");
      assert.equal(existsSync(pendingCredentialFile(file)), false);
      assert.deepEqual([1, 2].map(() => credential.dialPassword()), ["new-password", "new-password"], "once confirmed, only the new one");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("a push's remembered composition (R11, R31)", () => {
  it("R31: records that change only what was sent (DeclarationSent) compose nothing again; a record composition reads composes anew, and so does another configuration", () => {
    const mesh = exampleMesh();
    const memo = newCompositionMemo();
    const first = composeRemembered(memo, mesh.state, EXAMPLE_CONFIG);
    const node = first.declarations[0]!;
    assert.ok(node.ok);
    const sent = evolve(mesh.state, [{ sequence: mesh.state.sequence + 1, commit: { commandId: "sent", entity: { kind: "push", id: "p" }, events: [
      { actor: "controller-mesh-controller", commandId: "sent", at: "2026-01-01T00:00:00.000Z", type: "DeclarationSent", node: node.declaration.node, digest: node.declaration.digest, recordsSequence: mesh.state.sequence },
    ] } }]);
    assert.notEqual(sent, mesh.state);
    assert.equal(composeRemembered(memo, sent, EXAMPLE_CONFIG), first, "the same composition: nothing composition reads changed");
    const b = new MeshBuilder();
    for (const c of mesh.commits) b.commit(c.commit.entity.kind, c.commit.entity.id, ...(c.commit.events as never[]));
    b.node("delta");
    const changed = composeRemembered(memo, b.state(), EXAMPLE_CONFIG);
    assert.notEqual(changed, first);
    assert.deepEqual(changed, composeDeclarations(b.state(), EXAMPLE_CONFIG, sha256), "composed anew, as without a memo");
    assert.notEqual(composeRemembered(memo, b.state(), { controllerSubmits: [] }), changed, "another configuration");
  });

  it("R11 R31: over a churning history folded every way the controller folds (evolve, a draft fold, a copy fold), the remembered composition is always the one composing anew gives: a fold that changed a slice in place would hand back a stale one", () => {
    const history: SequencedCommit[] = generateCommits({ seed: 13, events: 2500, maxNodes: 12 }).map((commit, i) => ({ sequence: i + 1, commit }));
    const memo = newCompositionMemo();
    let state: State = evolve(initialState, history.slice(0, 40));
    let remembered = 0;
    for (let at = 40, step = 0; at < history.length; step += 1) {
      const last = memo.last?.composition;
      const size = 1 + (step % 7) * 9;
      const batch = history.slice(at, at + size);
      at += batch.length;
      if (step % 3 === 0) state = evolve(state, batch);
      else {
        // One draft over the batch, added whole or in two parts.
        const fold = startFold(state);
        const half = step % 3 === 1 ? batch.length : Math.ceil(batch.length / 2);
        fold.add(batch.slice(0, half));
        fold.add(batch.slice(half));
        state = fold.finish();
      }
      const composition = composeRemembered(memo, state, EXAMPLE_CONFIG);
      if (composition === last) remembered += 1;
      assert.deepEqual(composition, composeDeclarations(state, EXAMPLE_CONFIG, sha256), `after sequence ${state.sequence}`);
    }
    assert.ok(remembered > 0, "some batches changed nothing composition reads, and the memo answered them");
  });
});
