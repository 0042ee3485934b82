import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCli } from "../../src/cli/run.ts";
import { EXIT_OK, EXIT_USAGE, type CliIo } from "../../src/cli/context.ts";
import { newPassword, publicKeyOfSeed } from "../../src/crypto/secrets.ts";
import { createHash } from "node:crypto";
import { splitUserList, userListPartHeaders } from "../../src/push/publish.ts";
import { USER_LIST_DIGEST_HEADER, USER_LIST_PART_HEADER } from "../../src/names.ts";
import {
  UserListParts, MAX_LISTS_KEPT,
  applyDeclaration, credentialFrom, DeclarationRefused, HostStateError, initHostKeys, readNodePrivateKey, readNodeSeeds, readOwned,
  rotateNodeKey, saveNodeCredential,
} from "../../src/host/index.ts";
import { UserListPartRefused, readPartHeader } from "../../src/contracts/userList.ts";
import { hostDeclaration } from "../support/hostDeclaration.ts";

/** The host's file side without a server: keys, credentials, applying declarations (R29), the CLI. */

function memoryIo(): CliIo & { out(): string; err(): string } {
  let out = "";
  let err = "";
  return {
    stdout: { write: (s: string) => { out += s; } },
    stderr: { write: (s: string) => { err += s; } },
    env: {},
    out: () => out,
    err: () => err,
  };
}

const declaration = hostDeclaration;

describe("host state: keys and credentials", () => {
  let root: string;
  before(() => { root = mkdtempSync(join(tmpdir(), "mesh-host-unit-")); });
  after(() => { rmSync(root, { recursive: true, force: true }); });

  it("R3 R64: host init writes both private keys 0600 (X25519 and the nkey seed), prints both public keys, and refuses to overwrite them without --force", async () => {
    const state = join(root, "init");
    const io = memoryIo();
    assert.equal(await runCli(["host", "init", "--state", state], io), EXIT_OK);
    const [publicKey, nkey] = io.out().trim().split("\n");
    assert.equal(readFileSync(join(state, "node.pub"), "utf8").trim(), publicKey);
    assert.equal(statSync(join(state, "node.key")).mode & 0o777, 0o600);
    const seed = readFileSync(join(state, "node.seed"), "utf8").trim();
    assert.equal(statSync(join(state, "node.seed")).mode & 0o777, 0o600);
    assert.equal(publicKeyOfSeed(seed), nkey, "the printed nkey is the seed's");
    assert.equal(readFileSync(join(state, "node.nkey"), "utf8").trim(), nkey);
    const key = readNodePrivateKey(state);
    assert.ok(!io.out().includes(key) && !io.err().includes(key), "the private key is never printed");
    assert.ok(!io.out().includes(seed) && !io.err().includes(seed), "the seed is never printed");

    const again = memoryIo();
    assert.equal(await runCli(["host", "init", "--state", state], again), EXIT_USAGE);
    assert.equal(readNodePrivateKey(state), key, "the key is kept");
    assert.throws(() => initHostKeys(state), (e: unknown) => e instanceof HostStateError && e.code === "key-exists");

    const forced = memoryIo();
    assert.equal(await runCli(["host", "init", "--state", state, "--force", "--json"], forced), EXIT_OK);
    assert.notEqual(readNodePrivateKey(state), key);
    assert.equal(JSON.parse(forced.out()).publicKey, readFileSync(join(state, "node.pub"), "utf8").trim());
  });

  it("R3 R64: host credential joins the enrol reply (no secret in it) with the node's own seed and keeps it 0600, printing no seed", async () => {
    const state = join(root, "cred");
    const { nkey } = initHostKeys(state);
    const seed = readFileSync(join(state, "node.seed"), "utf8").trim();
    const reply = { ok: true, reply: { node: "alpha", credential: { address: "tls://127.0.0.1:4222", user: "node-alpha", nkey, fingerprint: "" } } };
    writeFileSync(join(root, "reply.json"), JSON.stringify(reply));
    const io = memoryIo();
    assert.equal(await runCli(["host", "credential", "--state", state, "--from", join(root, "reply.json")], io), EXIT_OK);
    const saved = JSON.parse(readFileSync(join(state, "credential.json"), "utf8"));
    assert.deepEqual(saved, { address: "tls://127.0.0.1:4222", user: "node-alpha", seed });
    assert.equal(statSync(join(state, "credential.json")).mode & 0o777, 0o600);
    assert.ok(!io.out().includes(seed) && !io.err().includes(seed));
  });

  // Found by a new-user trial: the text `mesh node enrol` prints, saved to a file, was refused
  // without a word of how to save the reply as data.
  it("host credential of a file that is not JSON is a usage error saying how to save the enrol reply as data", async () => {
    const state = join(root, "text-reply");
    initHostKeys(state);
    writeFileSync(join(root, "reply.txt"), "enrolled alpha\n");
    const io = memoryIo();
    assert.equal(await runCli(["host", "credential", "--state", state, "--from", join(root, "reply.txt")], io), EXIT_USAGE);
    assert.match(io.err(), /is not a JSON enrol reply or credential: save the reply as data, `mesh node enrol .* -o json > /);
  });

  it("R64: host credential accepts every form the CLI prints: enrol and rotate replies, their --json forms, the bare credential, a plain file", () => {
    const state = join(root, "forms");
    const { nkey } = initHostKeys(state);
    const seed = readFileSync(join(state, "node.seed"), "utf8").trim();
    const fingerprint = Array.from({ length: 32 }, () => "AB").join(":");
    const bare = { address: "tls://127.0.0.1:4222", user: "node-alpha", nkey, fingerprint };
    const expected = { address: "tls://127.0.0.1:4222", user: "node-alpha", seed, fingerprint };
    const forms = [
      { node: "alpha", credential: bare },
      { ok: true, commandId: "c", node: "alpha", credential: bare },
      { ok: true, reply: { node: "alpha", credential: bare } },
      bare,
      expected,
    ];
    const seeds = () => readNodeSeeds(state);
    for (const form of forms) assert.deepEqual(credentialFrom(form, seeds), expected, JSON.stringify(Object.keys(form)));
  });

  it("R3 R64: a reply naming a key this node does not hold is refused, naming no secret", () => {
    const mine = join(root, "mine");
    const theirs = join(root, "theirs");
    initHostKeys(mine);
    const { nkey } = initHostKeys(theirs);
    const reply = { node: "x", credential: { address: "tls://127.0.0.1:4222", user: "node-x", nkey } };
    const seed = readFileSync(join(mine, "node.seed"), "utf8").trim();
    assert.throws(() => credentialFrom(reply, () => readNodeSeeds(mine)), (e: unknown) => e instanceof HostStateError && e.code === "bad-credential" && !e.message.includes(seed));
  });

  it("R50 R64: host rotate-key makes a pending seed (0600) and prints its key; a reply naming it makes it the node's current seed", async () => {
    const state = join(root, "rotate");
    const { nkey: first } = initHostKeys(state);
    const firstSeed = readFileSync(join(state, "node.seed"), "utf8").trim();
    saveNodeCredential(state, { node: "r", credential: { address: "tls://127.0.0.1:4222", user: "node-r", nkey: first } });
    const io = memoryIo();
    assert.equal(await runCli(["host", "rotate-key", "--state", state], io), EXIT_OK);
    const next = io.out().trim();
    const pending = readFileSync(join(state, "node.seed.next"), "utf8").trim();
    assert.equal(statSync(join(state, "node.seed.next")).mode & 0o777, 0o600);
    assert.equal(publicKeyOfSeed(pending), next);
    assert.ok(!io.out().includes(pending) && !io.err().includes(pending), "the seed is never printed");
    assert.equal(rotateNodeKey(state).nkey, next, "asked again, the pending key is kept (it may be recorded already)");
    assert.equal(JSON.parse(readFileSync(join(state, "credential.json"), "utf8")).seed, firstSeed, "the node dials with its current seed meanwhile");
    saveNodeCredential(state, { credential: { address: "tls://127.0.0.1:4222", user: "node-r", nkey: next } });
    assert.equal(JSON.parse(readFileSync(join(state, "credential.json"), "utf8")).seed, pending);
    assert.equal(readFileSync(join(state, "node.seed"), "utf8").trim(), pending);
    assert.equal(readFileSync(join(state, "node.nkey"), "utf8").trim(), next);
    assert.equal(existsSync(join(state, "node.seed.next")), false);
  });

  it("host init, rotate-key and credential --json print one object with ok, as every verb does", async () => {
    const state = join(root, "json");
    const init = memoryIo();
    assert.equal(await runCli(["host", "init", "--state", state, "--json"], init), EXIT_OK);
    const made = JSON.parse(init.out()) as { ok: boolean; publicKey: string; nkey: string };
    assert.equal(made.ok, true);
    assert.equal(made.nkey, readFileSync(join(state, "node.nkey"), "utf8").trim());
    writeFileSync(join(root, "json-reply.json"), JSON.stringify({ node: "j", credential: { address: "tls://127.0.0.1:4222", user: "node-j", nkey: made.nkey } }));
    const kept = memoryIo();
    assert.equal(await runCli(["host", "credential", "--state", state, "--from", join(root, "json-reply.json"), "--json"], kept), EXIT_OK);
    assert.equal((JSON.parse(kept.out()) as { ok: boolean }).ok, true);
    const rotated = memoryIo();
    assert.equal(await runCli(["host", "rotate-key", "--state", state, "--json"], rotated), EXIT_OK);
    const pending = JSON.parse(rotated.out()) as { ok: boolean; nkey: string };
    assert.equal(pending.ok, true);
    assert.equal(pending.nkey, publicKeyOfSeed(readFileSync(join(state, "node.seed.next"), "utf8").trim()));
  });

  it("R11: the broker's holder needs all four --bus-* options together", async () => {
    const state = join(root, "bus");
    initHostKeys(state);
    writeFileSync(join(state, "credential.json"), JSON.stringify({ address: "tls://127.0.0.1:1", user: "node-a", password: newPassword() }));
    const io = memoryIo();
    assert.equal(await runCli(["host", "--state", state, "--node", "a", "--bus-include", join(state, "users.conf")], io), EXIT_USAGE);
    assert.match(io.err(), /--bus-config/);
  });
});

describe("applying a declaration to the state folder", () => {
  let root: string;
  let state: string;
  let publicKey: string;
  let key: string;
  before(() => {
    root = mkdtempSync(join(tmpdir(), "mesh-host-apply-"));
    state = join(root, "node");
    publicKey = initHostKeys(state).publicKey;
    key = readNodePrivateKey(state);
  });
  after(() => { rmSync(root, { recursive: true, force: true }); });

  it("R29: writes what is named, is idempotent, removes what the mesh owned and no longer names, keeps found files", () => {
    const web = newPassword();
    const first = applyDeclaration(state, declaration("n1", publicKey, [{ module: "web", password: web }, { module: "cache", password: newPassword() }], "d1"), key);
    assert.deepEqual(first.removed, []);
    assert.ok(first.written.includes("modules/web/credential.json"));
    assert.equal(JSON.parse(readFileSync(join(state, "modules/web/credential.json"), "utf8")).fingerprint, "AA:BB");
    assert.match(readFileSync(join(state, "modules/web/env"), "utf8"), /^MESH_USER='module-web'$/m);

    // The same module again (a redelivery, or a push for another module) rewrites nothing of it.
    const replay = applyDeclaration(state, declaration("n1", publicKey, [{ module: "web", password: web }], "d2"), key);
    assert.deepEqual(replay.written, [], "unchanged files are not rewritten");
    assert.deepEqual(replay.removed, ["modules/cache/credential.json", "modules/cache/env", "modules/cache/module.json"]);
    assert.ok(!existsSync(join(state, "modules/cache")), "the folder the mesh emptied is removed");

    mkdirSync(join(state, "modules/web/data"), { recursive: true });
    writeFileSync(join(state, "modules/web/data/found.db"), "operator data");
    const empty = applyDeclaration(state, declaration("n1", publicKey, [], "d3"), key);
    assert.deepEqual(empty.owned, []);
    assert.deepEqual(empty.kept, ["modules/web/data/found.db"]);
    assert.equal(readFileSync(join(state, "modules/web/data/found.db"), "utf8"), "operator data");
    assert.ok(!existsSync(join(state, "modules/web/credential.json")));
    assert.equal(readOwned(state)?.digest, "d3");
  });

  it("R29: a declaration naming an unsafe module name is refused and changes nothing", () => {
    const before = readOwned(state);
    assert.throws(
      () => applyDeclaration(state, declaration("n1", publicKey, [{ module: "../escape", password: newPassword() }], "bad"), key),
      (e: unknown) => e instanceof DeclarationRefused,
    );
    assert.deepEqual(readOwned(state), before);
    assert.ok(!existsSync(join(root, "escape")));
  });
});

describe("user-list parts: stored as they arrive, installed only complete and matching", () => {
  let root: string;
  before(() => { root = mkdtempSync(join(tmpdir(), "mesh-host-parts-")); });
  after(() => { rmSync(root, { recursive: true, force: true }); });

  const sha256 = (bytes: Uint8Array | string) => createHash("sha256").update(bytes).digest("hex");
  /** A list of `users` fake users cut by push's own splitter into parts of `partBytes`. */
  const list = (users: number, partBytes = 1024, tag = "a") => {
    const text = `authorization { users = [\n${Array.from({ length: users }, (_, i) => `  { user: "node-${tag}${i}", password: "$2a$04$${"x".repeat(53)}" }`).join("\n")}\n] }\n`;
    const parts = splitUserList(text, partBytes);
    const digest = sha256(text);
    return { text, parts, digest, ref: { digest, bytes: Buffer.byteLength(text), parts: parts.length } };
  };
  /** What the agent does with one part message: read its headers, store its bytes. */
  const deliver = (store: UserListParts, digest: string, index: number, count: number, bytes: Uint8Array) => {
    const h = userListPartHeaders(digest, index, count);
    store.store(readPartHeader((name) => h.get(name)), bytes);
  };

  it("R11: parts arriving in any order join to the list; a missing part is named, not waited for", () => {
    const store = new UserListParts(join(root, "order"));
    const l = list(40);
    assert.ok(l.parts.length >= 4);
    const order = l.parts.map((_, i) => i).reverse();
    for (const index of order.slice(0, -2)) deliver(store, l.digest, index, l.parts.length, l.parts[index]!);
    const incomplete = store.assemble(l.ref);
    assert.equal(incomplete.ok, false);
    if (!incomplete.ok) {
      assert.equal(incomplete.code, "missing-parts");
      if (incomplete.code === "missing-parts") assert.deepEqual(incomplete.missing, [0, 1]);
    }
    for (const index of [1, 0]) deliver(store, l.digest, index, l.parts.length, l.parts[index]!);
    const done = store.assemble(l.ref);
    assert.ok(done.ok);
    if (done.ok) assert.equal(done.text, l.text);
    for (const part of store.stored(l.digest)) {
      assert.equal(statSync(join(root, "order", "user-list-parts", l.digest, String(part))).mode & 0o777, 0o600, "a part holds hashes: 0600");
    }
  });

  it("R11: parts whose bytes do not hash to the declared digest are refused", () => {
    const store = new UserListParts(join(root, "wrong"));
    const l = list(10);
    l.parts.forEach((p, i) => deliver(store, l.digest, i, l.parts.length, i === 0 ? Buffer.from(Buffer.from(p).toString().replace("node-a0", "node-z0")) : p));
    const refused = store.assemble(l.ref);
    assert.equal(refused.ok, false);
    if (!refused.ok) assert.equal(refused.code, "wrong-digest");
    const short = store.assemble({ ...l.ref, bytes: l.ref.bytes + 1 });
    assert.equal(short.ok, false);
    if (!short.ok) assert.equal(short.code, "wrong-size");
  });

  it("R11: stale parts of an older list are never mixed into the new one, and are dropped", () => {
    const store = new UserListParts(join(root, "stale"));
    const older = list(30, 1024, "old");
    const newer = list(20, 1024, "new");
    assert.ok(older.parts.length > newer.parts.length, "the older list has a tail the newer lacks");
    older.parts.forEach((p, i) => deliver(store, older.digest, i, older.parts.length, p));
    // The newer list's part 1 is lost: the older list's part 1 must not stand in for it.
    newer.parts.forEach((p, i) => { if (i !== 1) deliver(store, newer.digest, i, newer.parts.length, p); });
    const missing = store.assemble(newer.ref);
    assert.equal(missing.ok, false);
    if (!missing.ok && missing.code === "missing-parts") assert.deepEqual(missing.missing, [1]);
    else assert.fail("want missing-parts");
    deliver(store, newer.digest, 1, newer.parts.length, newer.parts[1]!);
    const joined = store.assemble(newer.ref);
    assert.ok(joined.ok);
    if (joined.ok) assert.equal(joined.text, newer.text);
    store.discardExcept(newer.digest);
    assert.deepEqual(store.digests(), [newer.digest]);
    assert.deepEqual(store.stored(older.digest), []);
    // At most MAX_LISTS_KEPT lists are kept however many arrive.
    for (let i = 0; i < MAX_LISTS_KEPT + 2; i += 1) {
      const l = list(1, 1024, `extra${i}`);
      deliver(store, l.digest, 0, 1, l.parts[0]!);
    }
    assert.equal(store.digests().length, MAX_LISTS_KEPT);
  });

  it("R11: a part without usable headers is refused (bad-header), never stored", () => {
    const bad = [
      {},
      { [USER_LIST_DIGEST_HEADER]: "../../etc", [USER_LIST_PART_HEADER]: "0/1" },
      { [USER_LIST_DIGEST_HEADER]: "a".repeat(64), [USER_LIST_PART_HEADER]: "3/3" },
      { [USER_LIST_DIGEST_HEADER]: "a".repeat(64), [USER_LIST_PART_HEADER]: "0/99999" },
      { [USER_LIST_DIGEST_HEADER]: "a".repeat(64), [USER_LIST_PART_HEADER]: "one" },
    ];
    for (const headers of bad) {
      assert.throws(
        () => readPartHeader((name) => (headers as Record<string, string>)[name] ?? ""),
        (e: unknown) => e instanceof UserListPartRefused && e.code === "bad-header",
        JSON.stringify(headers),
      );
    }
  });
});

describe("the broker's report of its installed list (R44)", () => {
  it("R44: usersOfListText names every user of a rendered list, quoted or plain", async () => {
    const { renderUserList } = await import("../../src/compose/index.ts");
    const { keysOfListText, usersOfListText } = await import("../../src/host/declaration.ts");
    const permissions = { publish: { allow: ["a"] }, subscribe: { allow: ["b"] } };
    const text = renderUserList({ users: [
      { user: "node-alpha", nkey: `U${"A".repeat(55)}`, permissions, principal: { kind: "node", name: "alpha" } },
      { user: "module-a", nkey: `U${"B".repeat(55)}`, permissions, principal: { kind: "module", name: "a" } },
    ] });
    assert.deepEqual(usersOfListText(text), ["module-a", "node-alpha"]);
    assert.deepEqual(keysOfListText(text), { "module-a": `U${"B".repeat(55)}`, "node-alpha": `U${"A".repeat(55)}` }, "R64: each name's key");
  });
});
