import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { cpSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, sep } from "node:path";
import { newPassword } from "../../src/crypto/secrets.ts";
import { applyDeclaration, DeclarationRefused, MAX_OWNED_FILE_BYTES, MAX_OWNED_TOTAL_BYTES, readOwned, recheckOwned } from "../../src/host/apply.ts";
import { initHostKeys, readNodePrivateKey } from "../../src/host/index.ts";
import { Declaration } from "../../src/contracts/declaration.ts";
import { hostDeclaration } from "../support/hostDeclaration.ts";

/**
 * R69 (issues 25 and 26): a host applies a declaration all or nothing. It never writes or removes
 * through a link it did not make, bounds each file and the whole, and a refused declaration
 * changes nothing on disk; an apply killed at any point is found, after a restart, as the old tree
 * or the new one, never a mix, with nothing left behind.
 */

const PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

const declaration = hostDeclaration;

/** Every entry under `dir` (links not followed): path → content, `<link>` or `<folder>`. */
function tree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      const rel = relative(dir, path).split(sep).join("/");
      const stat = lstatSync(path);
      if (stat.isSymbolicLink()) out[rel] = "<link>";
      else if (stat.isDirectory()) { out[rel] = "<folder>"; walk(path); } else out[rel] = `${(stat.mode & 0o777).toString(8)} ${readFileSync(path, "utf8")}`;
    }
  };
  walk(dir);
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)));
}

const isRefused = (code: string) => (e: unknown) => e instanceof DeclarationRefused && e.code === code;

describe("R69: a host applies a declaration all or nothing", () => {
  let root: string;
  let publicKey: string;
  let key: string;
  let count = 0;
  /** A fresh node folder holding declaration `web` + `cache` applied, and an outside folder. */
  const fresh = () => {
    const state = join(root, `node-${++count}`);
    publicKey = initHostKeys(state).publicKey;
    key = readNodePrivateKey(state);
    applyDeclaration(state, declaration("n1", publicKey, [{ module: "web", password: newPassword() }, { module: "cache", password: newPassword() }], "old"), key, PEM);
    const outside = join(root, `outside-${count}`);
    mkdirSync(outside);
    writeFileSync(join(outside, "keep.txt"), "the operator's\n");
    return { state, outside };
  };
  before(() => { root = mkdtempSync(join(tmpdir(), "mesh-host-r69-")); });
  after(() => { rmSync(root, { recursive: true, force: true }); });

  it("R69: a module folder that is a link the host did not make is refused: nothing is written or removed through it, nothing changes", () => {
    const { state, outside } = fresh();
    symlinkSync(outside, join(state, "modules", "evil"));
    const before = tree(state);
    assert.throws(
      () => applyDeclaration(state, declaration("n1", publicKey, [{ module: "evil", password: newPassword() }], "new"), key, PEM),
      isRefused("link"),
    );
    assert.deepEqual(readdirSync(outside), ["keep.txt"], "no seed written outside the state folder");
    assert.deepEqual(tree(state), before, "nothing changed in the state folder");
  });

  it("R69: an owned module folder replaced by a link is refused on removal: nothing is deleted through it", () => {
    const { state, outside } = fresh();
    for (const name of readdirSync(join(state, "modules", "cache"))) cpSync(join(state, "modules", "cache", name), join(outside, name));
    rmSync(join(state, "modules", "cache"), { recursive: true });
    symlinkSync(outside, join(state, "modules", "cache"));
    const outsideBefore = tree(outside);
    const before = tree(state);
    assert.throws(
      () => applyDeclaration(state, declaration("n1", publicKey, [{ module: "web", password: newPassword() }], "new"), key, PEM),
      isRefused("link"),
    );
    assert.deepEqual(tree(outside), outsideBefore, "no file deleted through the link");
    assert.deepEqual(tree(state), before);
  });

  it("R69: a file over MAX_OWNED_FILE_BYTES is refused, nothing written", () => {
    const { state } = fresh();
    const before = tree(state);
    const huge = { notes: "x".repeat(MAX_OWNED_FILE_BYTES) };
    assert.throws(
      () => applyDeclaration(state, declaration("n1", publicKey, [{ module: "big", password: newPassword(), extra: huge }], "new"), key, PEM),
      isRefused("too-large"),
    );
    assert.deepEqual(tree(state), before);
  });

  it("R69: a declaration whose files come to more than MAX_OWNED_TOTAL_BYTES is refused, nothing written", () => {
    const { state } = fresh();
    const before = tree(state);
    const perModule = MAX_OWNED_FILE_BYTES - 1024;
    const modules = Array.from({ length: Math.ceil(MAX_OWNED_TOTAL_BYTES / perModule) + 1 }, (_, i) => ({ module: `m${i}`, password: newPassword(), extra: { notes: "x".repeat(perModule) } }));
    assert.throws(() => applyDeclaration(state, declaration("n1", publicKey, modules, "new"), key, PEM), isRefused("too-large"));
    assert.deepEqual(tree(state), before);
  });

  it("R69: a declaration that fails after many files (the 300th module's path is taken by a folder) leaves nothing behind", () => {
    const { state } = fresh();
    mkdirSync(join(state, "modules", "m299", "env"), { recursive: true });
    const before = tree(state);
    const modules = Array.from({ length: 300 }, (_, i) => ({ module: `m${i}`, password: newPassword() }));
    assert.throws(() => applyDeclaration(state, declaration("n1", publicKey, modules, "new"), key, PEM), isRefused("not-a-file"));
    assert.deepEqual(tree(state), before, "no file of the refused declaration, no staging folder");
    assert.equal(readOwned(state)?.digest, "old");
  });
});

describe("R69 (issue 26): what a killed write left is removed at the next apply", () => {
  let root: string;
  before(() => { root = mkdtempSync(join(tmpdir(), "mesh-host-leftovers-")); });
  after(() => { rmSync(root, { recursive: true, force: true }); });

  it("R69: a durable write's temporary file beside a file the mesh owns, a staging folder and a journal's temporary are removed; others' files stay, temporary or not", () => {
    const state = join(root, "node");
    const { publicKey } = initHostKeys(state);
    const key = readNodePrivateKey(state);
    const d = declaration("n1", publicKey, [{ module: "web", password: newPassword() }], "d1");
    applyDeclaration(state, d, key);
    mkdirSync(join(state, "modules", "web", "data"));
    writeFileSync(join(state, "modules", "web", "data", ".db.4242.0123abcd.tmp"), "the module's own write");
    const before = tree(state);
    writeFileSync(join(state, "modules", "web", ".env.4242.0123abcd.tmp"), "MESH_NKEY_SEED=half");
    mkdirSync(join(state, ".staging-0123456789ab"));
    writeFileSync(join(state, ".staging-0123456789ab", "seed"), "x");
    writeFileSync(join(state, ".apply-journal.json.4242.0123abcd.tmp"), "{");
    writeFileSync(join(state, ".credential.json.4242.0123abcd.tmp"), "another writer's");
    applyDeclaration(state, d, key);
    const { [".credential.json.4242.0123abcd.tmp"]: another, ...after } = tree(state);
    assert.match(another ?? "", /another writer's$/, "another writer's temporary file is not the host's to remove");
    assert.deepEqual(after, before);
  });
});

describe("R69 (issue 26): an apply killed -9 at any point is found, after a restart, as the old tree or the new one", () => {
  let root: string;
  before(() => { root = mkdtempSync(join(tmpdir(), "mesh-host-crash-")); });
  after(() => { rmSync(root, { recursive: true, force: true }); });

  const child = join(import.meta.dirname, "..", "support", "applyChild.ts");
  /** Runs the child applying `job` to `state`, killed before change `killAt` (0: never). */
  const run = (state: string, job: string, killAt: number) =>
    new Promise<{ status: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((resolve) => {
      const spawned = spawn(process.execPath, ["--import", "tsx", child, state, job, String(killAt)]);
      let stdout = "";
      let stderr = "";
      spawned.stdout.on("data", (chunk: Buffer) => { stdout += chunk.toString(); });
      spawned.stderr.on("data", (chunk: Buffer) => { stderr += chunk.toString(); });
      spawned.on("close", (status, signal) => resolve({ status, signal, stdout, stderr }));
    });

  it("R69: killed before each change to the file system, the restart (its re-check at start) finds the old tree or the new one, never a mix, and no leftovers", { timeout: 300_000 }, async () => {
    const template = join(root, "template");
    const { publicKey } = initHostKeys(template);
    const privateKey = readNodePrivateKey(template);
    const job = (name: string, d: Declaration) => {
      const file = join(root, `${name}.json`);
      writeFileSync(file, JSON.stringify({ declaration: d, privateKey, report: { node: "n1", digest: d.digest, ok: true } }));
      return file;
    };
    // old: web and cache (with a file the operator put there); new: web with a new secret, cache gone, db added
    const oldJob = job("old", declaration("n1", publicKey, [{ module: "web", password: newPassword() }, { module: "cache", password: newPassword() }], "old"));
    const newJob = job("new", declaration("n1", publicKey, [{ module: "web", password: newPassword() }, { module: "db", password: newPassword() }], "new"));
    const first = await run(template, oldJob, 0);
    assert.equal(first.status, 0, first.stderr);
    mkdirSync(join(template, "modules", "cache", "data"));
    writeFileSync(join(template, "modules", "cache", "data", "found.db"), "the operator's\n");
    const oldTree = tree(template);

    const probe = join(root, "probe");
    cpSync(template, probe, { recursive: true });
    const full = await run(probe, newJob, 0);
    assert.equal(full.status, 0, full.stderr);
    const changes = Number(/changes (\d+)/.exec(full.stdout)?.[1]);
    assert.ok(changes > 5, `the apply made ${changes} changes`);
    const newTree = tree(probe);
    assert.notDeepEqual(newTree, oldTree);

    const same = (a: Record<string, string>, b: Record<string, string>) => JSON.stringify(a) === JSON.stringify(b);
    /** Kills an apply before change `killAt`, restarts (the re-check at start), and says what it found. */
    const killedAt = async (killAt: number): Promise<string> => {
      const state = join(root, `kill-${killAt}`);
      cpSync(template, state, { recursive: true });
      const killed = await run(state, newJob, killAt);
      assert.equal(killed.signal, "SIGKILL", `killed before change ${killAt}: ${killed.stderr}`);
      recheckOwned(state, privateKey);
      const found = tree(state);
      rmSync(state, { recursive: true, force: true });
      if (same(found, oldTree)) return "old";
      if (same(found, newTree)) return "new";
      const leftovers = Object.keys(found).filter((p) => !(p in newTree) && !(p in oldTree));
      return `change ${killAt}: a mix${leftovers.length ? `, leftovers ${leftovers.join(", ")}` : ""}`;
    };
    // Two children at a time (each is a node process with tsx: most of the test's time).
    const found: string[] = [];
    for (let killAt = 1; killAt <= changes; killAt += 2) {
      found.push(...await Promise.all([killAt, killAt + 1].filter((k) => k <= changes).map(killedAt)));
    }
    assert.deepEqual(found.filter((f) => f !== "old" && f !== "new"), []);
    assert.equal(found[0], "old", "killed before its first change: the old tree");
    assert.equal(found.at(-1), "new", "killed before its last change (the staging folder's removal): the new tree");
  });
});
