import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "../../installer/serverConfig.ts";
import { natsServerBinary } from "../support/natsServer.ts";

/**
 * Issue 29: `mesh` installs like any Node tool. The package is packed (`npm pack`: `prepare` builds
 * dist/), installed from the tarball into an empty prefix without dev dependencies (no tsx, no
 * TypeScript), and run from there as a person would: `--version`, `--help`, and `mesh up` (its
 * bus, controller and host, the latter two the built daemon) read back with `mesh nodes`.
 * Needs the npm registry (the install fetches the dependencies) and nats-server.
 */

const REPO = fileURLToPath(new URL("../../", import.meta.url));

type Run = { code: number; out: string; err: string };

/** Runs `file args` to its end; never throws for a non-zero exit (the code is in the result). */
function run(file: string, args: readonly string[], options: { cwd?: string; timeoutMs?: number } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { cwd: options.cwd ?? REPO, timeout: options.timeoutMs ?? 120_000, maxBuffer: 16 * 2 ** 20, env: process.env }, (error, out, err) => {
      if (error && typeof error.code !== "number") reject(new Error(`${file} ${args.join(" ")}: ${error.message}\n${err}`));
      else resolve({ code: typeof error?.code === "number" ? error.code : 0, out, err });
    });
  });
}

describe("mesh installed from its packed tarball, without dev dependencies (issue 29)", () => {
  let root: string;
  let installed: string;
  let mesh: string;
  let meshDir: string;

  before(async () => {
    natsServerBinary(); // a clear failure when nats-server is missing
    root = mkdtempSync(join(tmpdir(), "mesh-packed-"));
    meshDir = join(root, "mesh");
    const packed = await run("npm", ["pack", "--json", "--pack-destination", root], { timeoutMs: 300_000 });
    assert.equal(packed.code, 0, packed.err);
    const tarball = join(root, (JSON.parse(packed.out) as Array<{ filename: string }>)[0]!.filename);
    const prefix = join(root, "prefix");
    const install = await run("npm", ["install", "--global", "--prefix", prefix, "--omit=dev", "--no-audit", "--no-fund", tarball], { cwd: root, timeoutMs: 300_000 });
    assert.equal(install.code, 0, install.err);
    installed = join(prefix, "lib", "node_modules", "mesh-controller");
    mesh = join(prefix, "bin", "mesh");
  });
  after(async () => {
    if (mesh && existsSync(join(meshDir, "run"))) await run(mesh, ["down", "--dir", meshDir], { cwd: root });
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it("issue 29: the tarball ships the built code and no TypeScript; the install has no tsx", () => {
    assert.ok(existsSync(join(installed, "dist", "src", "cli", "main.js")), "dist/ is in the tarball");
    assert.ok(!existsSync(join(installed, "src")), "no TypeScript sources shipped");
    assert.ok(!existsSync(join(installed, "node_modules", "tsx")), "tsx is a dev dependency");
  });

  it("issue 29: `mesh --version` prints the package's version; `mesh --help` lists the verbs", async () => {
    const version = await run(mesh, ["--version"], { cwd: root });
    assert.equal(version.code, 0, version.err);
    const manifest = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { version: string };
    assert.equal(version.out.trim(), manifest.version);
    const help = await run(mesh, ["--help"], { cwd: root });
    assert.equal(help.code, 0, help.err);
    for (const verb of ["up", "down", "status", "nodes", "push"]) assert.match(help.out, new RegExp(`^\\s+${verb}\\b`, "m"), verb);
  });

  it("issue 29: `mesh up` starts a mesh whose controller and host run built, and `mesh nodes` reads it over the bus", async () => {
    const port = await freePort();
    const up = await run(mesh, ["up", "--dir", meshDir, "--address", `tls://127.0.0.1:${port}`, "--node", "alpha"], { cwd: root, timeoutMs: 180_000 });
    assert.equal(up.code, 0, `${up.out}\n${up.err}`);
    const nodes = await run(mesh, ["nodes", "--json", "--credential", join(meshDir, "operator.json")], { cwd: root });
    assert.equal(nodes.code, 0, nodes.err);
    const reply = JSON.parse(nodes.out) as { nodes: Array<{ name: string }> };
    assert.deepEqual(reply.nodes.map((n) => n.name), ["alpha"]);
  });
});
