import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCli } from "../../src/cli/run.ts";
import { EXIT_OK, EXIT_USAGE, type CliIo } from "../../src/cli/context.ts";
import { newPassword, sealToNode } from "../../src/crypto/secrets.ts";
import {
  applyDeclaration, credentialFrom, DeclarationRefused, HostDeclaration, HostStateError, initHostKeys, readNodePrivateKey, readOwned,
} from "../../src/host/index.ts";

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

function declaration(node: string, publicKey: string, modules: Array<{ module: string; password: string }>, digest: string): HostDeclaration {
  return HostDeclaration.parse({
    node,
    modules: modules.map((m) => ({
      module: m.module,
      version: "1.0.0",
      run: { image: `example/${m.module}:1` },
      credential: { address: "tls://bus.example:4222", user: `module-${m.module}`, sealed: sealToNode(publicKey, m.password), fingerprint: "AA:BB" },
      env: { MESH_USER: `module-${m.module}` },
      provisions: [],
    })),
    provisions: [],
    digest,
  });
}

describe("host state: keys and credentials", () => {
  let root: string;
  before(() => { root = mkdtempSync(join(tmpdir(), "mesh-host-unit-")); });
  after(() => { rmSync(root, { recursive: true, force: true }); });

  it("R3: host init writes the private key 0600, prints the public key, and refuses to overwrite it without --force", async () => {
    const state = join(root, "init");
    const io = memoryIo();
    assert.equal(await runCli(["host", "init", "--state", state], io), EXIT_OK);
    const publicKey = io.out().trim();
    assert.equal(readFileSync(join(state, "node.pub"), "utf8").trim(), publicKey);
    assert.equal(statSync(join(state, "node.key")).mode & 0o777, 0o600);
    const key = readNodePrivateKey(state);
    assert.ok(!io.out().includes(key) && !io.err().includes(key), "the private key is never printed");

    const again = memoryIo();
    assert.equal(await runCli(["host", "init", "--state", state], again), EXIT_USAGE);
    assert.equal(readNodePrivateKey(state), key, "the key is kept");
    assert.throws(() => initHostKeys(state), (e: unknown) => e instanceof HostStateError && e.code === "key-exists");

    const forced = memoryIo();
    assert.equal(await runCli(["host", "init", "--state", state, "--force", "--json"], forced), EXIT_OK);
    assert.notEqual(readNodePrivateKey(state), key);
    assert.equal(JSON.parse(forced.out()).publicKey, readFileSync(join(state, "node.pub"), "utf8").trim());
  });

  it("R3: host credential opens the enrol reply with the node's key and keeps it 0600, printing no password", async () => {
    const state = join(root, "cred");
    const { publicKey } = initHostKeys(state);
    const password = newPassword();
    const reply = { ok: true, reply: { node: "alpha", credential: { address: "nats://127.0.0.1:4222", user: "node-alpha", sealedPassword: sealToNode(publicKey, password), fingerprint: "" } } };
    writeFileSync(join(root, "reply.json"), JSON.stringify(reply));
    const io = memoryIo();
    assert.equal(await runCli(["host", "credential", "--state", state, "--from", join(root, "reply.json")], io), EXIT_OK);
    const saved = JSON.parse(readFileSync(join(state, "credential.json"), "utf8"));
    assert.deepEqual(saved, { address: "nats://127.0.0.1:4222", user: "node-alpha", password });
    assert.equal(statSync(join(state, "credential.json")).mode & 0o777, 0o600);
    assert.ok(!io.out().includes(password) && !io.err().includes(password));
  });

  it("R3: an enrol reply sealed to another key is refused, naming no secret", () => {
    const mine = join(root, "mine");
    const theirs = join(root, "theirs");
    initHostKeys(mine);
    const { publicKey } = initHostKeys(theirs);
    const password = newPassword();
    const reply = { node: "x", credential: { address: "nats://127.0.0.1:4222", user: "node-x", sealedPassword: sealToNode(publicKey, password) } };
    assert.throws(() => credentialFrom(reply, readNodePrivateKey(mine)), (e: unknown) => e instanceof HostStateError && e.code === "bad-credential" && !e.message.includes(password));
  });

  it("R11: the broker's holder needs all four --bus-* options together", async () => {
    const state = join(root, "bus");
    initHostKeys(state);
    writeFileSync(join(state, "credential.json"), JSON.stringify({ address: "nats://127.0.0.1:1", user: "node-a", password: newPassword() }));
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
    assert.match(readFileSync(join(state, "modules/web/env"), "utf8"), /^MESH_USER=module-web$/m);

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
