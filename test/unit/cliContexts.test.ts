/**
 * Issue 29: named contexts in the user's configuration folder, as kubectl's: which operator
 * credential a verb dials with, and `mesh context list | use | current | add`. A temporary HOME;
 * no server.
 */
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCli } from "../../src/cli/run.ts";
import { EXIT_OK, EXIT_REFUSED, EXIT_USAGE, UsageError, type CliIo } from "../../src/cli/context.ts";
import { contextNameOf, readUserConfig, registerContext, resolveCredential, type MeshUserConfig } from "../../src/cli/contexts.ts";
import { DEFAULT_CREDENTIAL_FILE, parseClientConfig } from "../../src/config.ts";

function memoryIo(env: Record<string, string>): CliIo & { out(): string; err(): string } {
  let out = "";
  let err = "";
  return { stdout: { write: (s: string) => { out += s; } }, stderr: { write: (s: string) => { err += s; } }, env, out: () => out, err: () => err };
}

const USER: MeshUserConfig = { currentContext: "home", contexts: { home: { credential: "/h/operator.json" }, prod: { credential: "/p/operator.json" } } };
const none = () => false;
const folder = (file: string) => file === DEFAULT_CREDENTIAL_FILE;
const config = { credentialFile: DEFAULT_CREDENTIAL_FILE, credentialSet: false };

describe("which credential a verb dials with (issue 29)", () => {
  it("--credential first, then MESH_CREDENTIAL, then --context or MESH_CONTEXT", () => {
    assert.equal(resolveCredential({ config, user: USER, exists: folder, flag: "/f.json", contextFlag: "prod" }).file, "/f.json");
    assert.deepEqual(resolveCredential({ config: { credentialFile: "/env.json", credentialSet: true }, user: USER, exists: folder, contextFlag: "prod" }), { file: "/env.json", source: "MESH_CREDENTIAL" });
    assert.deepEqual(resolveCredential({ config, user: USER, exists: folder, contextFlag: "prod" }), { file: "/p/operator.json", source: "--context", context: "prod" });
    assert.deepEqual(resolveCredential({ config: { ...config, context: "prod" }, user: USER, exists: folder }), { file: "/p/operator.json", source: "MESH_CONTEXT", context: "prod" });
  });

  it("this folder's .mesh/operator.json wins over the current context; the current context over the default", () => {
    assert.deepEqual(resolveCredential({ config, user: USER, exists: folder }), { file: DEFAULT_CREDENTIAL_FILE, source: "folder" });
    assert.deepEqual(resolveCredential({ config, user: USER, exists: none }), { file: "/h/operator.json", source: "current-context", context: "home" });
    assert.deepEqual(resolveCredential({ config, user: { contexts: {} }, exists: none }), { file: DEFAULT_CREDENTIAL_FILE, source: "default" });
  });

  it("a context that is none is a usage error naming the contexts and the closest", () => {
    assert.throws(() => resolveCredential({ config, user: USER, exists: none, contextFlag: "prd" }), (error: unknown) => {
      assert.ok(error instanceof UsageError);
      assert.match(error.message, /--context prd: no such context \(did you mean prod\?\): one of home, prod/);
      return true;
    });
  });

  it("the configuration folder is $XDG_CONFIG_HOME/mesh, else ~/.config/mesh, else none", () => {
    assert.equal(parseClientConfig({ XDG_CONFIG_HOME: "/x", HOME: "/h" }).configDir, "/x/mesh");
    assert.equal(parseClientConfig({ HOME: "/h" }).configDir, "/h/.config/mesh");
    assert.equal(parseClientConfig({}).configDir, undefined);
    assert.equal(parseClientConfig({ MESH_CONTEXT: "prod" }).context, "prod");
    assert.equal(parseClientConfig({ MESH_CREDENTIAL: "/c.json" }).credentialSet, true);
  });

  it("a mesh's context is named by its address", () => {
    assert.equal(contextNameOf("tls://127.0.0.1:4222"), "127.0.0.1-4222");
    assert.equal(contextNameOf("tls://bus.example.net:4222"), "bus.example.net-4222");
  });
});

describe("mesh context (issue 29)", () => {
  let home: string;
  let env: Record<string, string>;
  before(() => {
    home = mkdtempSync(join(tmpdir(), "mesh-home-"));
    env = { HOME: home };
  });
  after(() => { rmSync(home, { recursive: true, force: true }); });

  it("mesh up and genesis register their mesh as the current context; context list lists it, marked current", async () => {
    const credential = join(home, "operator.json");
    writeFileSync(credential, "{}");
    assert.match(registerContext(join(home, ".config", "mesh"), "tls://127.0.0.1:4333", credential) ?? "", /context 127\.0\.0\.1-4333 is now current/);
    assert.equal(registerContext(undefined, "tls://127.0.0.1:4333", credential), null, "no HOME: nothing registered");
    const io = memoryIo(env);
    assert.equal(await runCli(["context", "list"], io), EXIT_OK, io.err());
    assert.match(io.out(), /^\*\s+127\.0\.0\.1-4333\s+\S+operator\.json\s+true$/m);
    const current = memoryIo(env);
    assert.equal(await runCli(["context", "current"], current), EXIT_OK);
    assert.equal(current.out(), "127.0.0.1-4333\n");
  });

  it("context add adds one (current), context use switches, an unknown one is a usage error", async () => {
    const set = memoryIo(env);
    assert.equal(await runCli(["context", "add", "prod", "/p/operator.json"], set), EXIT_OK, set.err());
    assert.equal(readUserConfig(join(home, ".config", "mesh")).currentContext, "prod");
    const use = memoryIo(env);
    assert.equal(await runCli(["context", "use", "127.0.0.1-4333"], use), EXIT_OK, use.err());
    assert.equal((JSON.parse(readFileSync(join(home, ".config", "mesh", "config.json"), "utf8")) as MeshUserConfig).currentContext, "127.0.0.1-4333");
    const wrong = memoryIo(env);
    assert.equal(await runCli(["context", "use", "prd"], wrong), EXIT_USAGE);
    assert.match(wrong.err(), /no such context \(did you mean prod\?\)/);
  });

  it("--context names the credential a verb dials with: a context whose file is missing says so, naming it", async () => {
    const io = memoryIo(env);
    assert.equal(await runCli(["nodes", "--context", "prod"], io), EXIT_USAGE);
    assert.match(io.err(), /\/p\/operator\.json/);
    const unknown = memoryIo(env);
    assert.equal(await runCli(["nodes", "--context", "nope"], unknown), EXIT_USAGE);
    assert.match(unknown.err(), /--context nope: no such context/);
  });

  it("context current without one exits 1; without HOME the config verbs say to set it", async () => {
    const empty = mkdtempSync(join(tmpdir(), "mesh-home-"));
    try {
      const io = memoryIo({ HOME: empty });
      assert.equal(await runCli(["context", "current"], io), EXIT_REFUSED);
      const noHome = memoryIo({});
      assert.equal(await runCli(["context", "list"], noHome), EXIT_USAGE);
      assert.match(noHome.err(), /set HOME/);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
