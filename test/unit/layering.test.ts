import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { importsOf, tsFiles } from "../support/sources.ts";

/**
 * How the parts of src/ lean on each other (DESIGN.md section 3: a functional core, an imperative
 * shell). LAYERS below is the whole rule: for each part (a folder of src/, or a file at its top),
 * the parts its files may import. Anything not in its row is a never-rule. Read from the imports
 * in the source (type-only ones included), so a new file is checked the day it is added, and a
 * new folder must be given a row before any file in it passes.
 */
const ROOT = resolve(import.meta.dirname, "../..");

/** The core every part may lean on: the names of things, the genesis constants, the schemas. */
const NAMES = ["names.ts", "genesis.ts"];
const SCHEMAS = [...NAMES, "events", "manifest", "contracts", "decision.ts"];
/** The pure core: schemas, folds, composition and the deciders (no clock, no I/O; purity.test.ts). */
const CORE = [...SCHEMAS, "projections", "compose", "commands"];
/** The adapters every shell may use: the bus, files on disk, secrets, configuration. */
const ADAPTERS = ["bus", "files", "crypto", "config.ts"];

/**
 * Which part may import which (besides its own files). Read top-down: each row names only what
 * sits below it. `commands` holds the pure deciders alone: the shell that serves them on the bus
 * is `serve`. `push` and `bootstrap` share what both need through `controller` (raise, the
 * controller's credential) and `records`, never each other's start. `up` is the shell above
 * the controller's start and the host, and the CLI sits above `up`: `up` never imports `cli`.
 */
const LAYERS: Record<string, readonly string[]> = {
  "names.ts": [],
  "genesis.ts": ["names.ts"],
  manifest: ["names.ts"],
  events: ["names.ts", "manifest"],
  "decision.ts": ["events"],
  contracts: ["names.ts", "events", "manifest", "decision.ts"],
  projections: ["names.ts", "events", "manifest"],
  compose: [...SCHEMAS, "projections"],
  commands: [...SCHEMAS, "projections", "compose"],
  crypto: ["names.ts", "projections"],
  bus: ["names.ts", "crypto", "projections", "contracts"],
  files: ["names.ts", "bus"],
  "config.ts": ["names.ts", "bus", "files", "crypto", "manifest", "projections"],
  records: [...SCHEMAS, "projections"],
  controller: [...CORE, ...ADAPTERS],
  // client dials with a credential file and the rotated seed pending beside it (controller/credential.ts names it, R50).
  client: [...SCHEMAS, "bus", "files", "controller"],
  // push reads the host's backoff bound (host/plan.ts) to judge a new node's silence (R78).
  push: [...CORE, ...ADAPTERS, "records", "controller", "host", "serve"],
  serve: [...CORE, ...ADAPTERS, "records"],
  // what a process exports to watch it: metrics over the records' folds, discovery over the verb list.
  metrics: [...CORE],
  discovery: [...SCHEMAS, "bus"],
  // `mesh ui`'s web server: it reads the mesh through what the CLI gives it, never the CLI itself.
  ui: [...SCHEMAS],
  host: [...CORE, ...ADAPTERS, "metrics"],
  bootstrap: [...CORE, ...ADAPTERS, "records", "controller", "push", "serve", "metrics", "discovery"],
  up: [...CORE, ...ADAPTERS, "records", "controller", "push", "serve", "client", "host", "bootstrap", "installer"],
  // the module author's kit stands apart: the env's entry shapes (types), its file's reader, and
  // the bus's dial through a reload (bus/admitted.ts).
  kit: ["compose", "files", "bus"],
  cli: [...CORE, ...ADAPTERS, "records", "controller", "push", "client", "host", "bootstrap", "up", "installer", "metrics", "ui"],
};

/** The part a repository-relative path belongs to: `src/push/push.ts` is `push`, `src/names.ts` is `names.ts`, `installer/bus.ts` is `installer`. */
function partOf(path: string): string {
  const parts = path.split("/");
  if (parts[0] !== "src") return parts[0]!;
  return parts[1]!;
}

/** Each project file imported by a file under `folder` (relative to the repository: `src/push/push.ts`), by importer. */
function projectImports(folder: string): Array<{ from: string; to: string }> {
  return tsFiles(join(ROOT, folder)).flatMap((path) =>
    importsOf(readFileSync(path, "utf8"))
      .filter((specifier) => specifier.startsWith("."))
      .map((specifier) => ({ from: relative(ROOT, path), to: relative(ROOT, resolve(dirname(path), specifier)).split("\\").join("/") })));
}

/** Every import in src/ that crosses from one part into another. */
function crossings(): Array<{ from: string; to: string }> {
  const topFiles = readdirSync(join(ROOT, "src")).filter((name) => name.endsWith(".ts")).map((name) => join(ROOT, "src", name));
  const top = topFiles.flatMap((path) => importsOf(readFileSync(path, "utf8")).filter((s) => s.startsWith("."))
    .map((s) => ({ from: relative(ROOT, path), to: relative(ROOT, resolve(dirname(path), s)).split("\\").join("/") })));
  const folders = readdirSync(join(ROOT, "src")).filter((name) => statSync(join(ROOT, "src", name)).isDirectory());
  return [...top, ...folders.flatMap((folder) => projectImports(`src/${folder}`))].filter(({ from, to }) => partOf(from) !== partOf(to));
}

/** The crossings `LAYERS` does not allow, as `from imports to (part may not import part)` lines. */
function neverRuleBreaks(only?: (from: string) => boolean, layers: Record<string, readonly string[]> = LAYERS): string[] {
  return crossings()
    .filter(({ from }) => only === undefined || only(from))
    .filter(({ from, to }) => !(layers[partOf(from)] ?? []).includes(partOf(to)))
    .map(({ from, to }) => `${from} imports ${to} (${partOf(from)} may not import ${partOf(to)})`);
}

/** The imports of files under `folder` that reach into any of `forbidden` (folders or files, repository-relative). */
function reaching(folder: string, forbidden: readonly string[]): string[] {
  return projectImports(folder)
    .filter(({ to }) => forbidden.some((f) => to === f || to.startsWith(`${f}/`)))
    .map(({ from, to }) => `${from} imports ${to}`);
}

/** The files of `folder` that sit on an import circle among themselves (Tarjan's strongly connected components of size > 1). */
function circlesIn(folder: string): string[][] {
  const edges = new Map<string, string[]>();
  for (const { from, to } of projectImports(folder)) {
    const target = to.endsWith(".ts") ? to : `${to}.ts`;
    if (!target.startsWith(`${folder}/`)) continue;
    edges.set(from, [...(edges.get(from) ?? []), target]);
  }
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const circles: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    for (const next of edges.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (stack.includes(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!));
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      for (;;) {
        const top = stack.pop()!;
        component.push(top);
        if (top === node) break;
      }
      if (component.length > 1) circles.push(component.sort());
    }
  };
  for (const node of edges.keys()) if (!index.has(node)) visit(node);
  return circles;
}

describe("layering of src/", () => {
  it("the checker sees what it must (so the tests below can fail)", () => {
    const imports = projectImports("src/push");
    assert.ok(imports.some(({ from, to }) => from === "src/push/context.ts" && to === "src/records/catalogue.ts"), "push's imports are read and resolved");
    assert.equal(partOf("src/push/push.ts"), "push");
    assert.equal(partOf("src/names.ts"), "names.ts");
    assert.equal(partOf("installer/bus.ts"), "installer");
    assert.ok(crossings().some(({ from, to }) => partOf(from) === "bootstrap" && partOf(to) === "records"), "crossings are found");
    // A row that allowed nothing would flag every crossing of its part: the check can fail.
    assert.ok(neverRuleBreaks((from) => from.startsWith("src/bootstrap/"), { ...LAYERS, bootstrap: [] }).length > 0);
    assert.ok(circlesIn("src/projections").length === 0 || circlesIn("src/projections").every((c) => c.length > 1));
  });

  it("every folder and top-level file of src/ has a row in the table of layers", () => {
    const parts = readdirSync(join(ROOT, "src")).filter((name) => name.endsWith(".ts") || statSync(join(ROOT, "src", name)).isDirectory());
    assert.deepEqual(parts.filter((part) => LAYERS[part] === undefined), []);
  });

  it("no part of src/ imports a part its row in the table of layers does not name", () => {
    assert.deepEqual(neverRuleBreaks(), []);
  });

  it("src/commands holds the pure deciders alone: it imports no records, bus, crypto or shell (the serving shell is src/serve)", () => {
    assert.deepEqual(neverRuleBreaks((from) => from.startsWith("src/commands/")), []);
    assert.deepEqual(readdirSync(join(ROOT, "src/commands")).filter((name) => /^server/.test(name)), []);
  });

  it("src/up imports nothing from src/cli: what both use lives below them", () => {
    assert.deepEqual(reaching("src/up", ["src/cli"]), []);
  });

  it("push does not import the start (src/bootstrap): what both use (raise, the controller's credential) is in src/controller", () => {
    assert.deepEqual(reaching("src/push", ["src/bootstrap"]), []);
    assert.deepEqual(reaching("src/controller", ["src/bootstrap", "src/push"]), []);
  });

  it("Refusal and Decision live below the commands (src/decision.ts, importing only the event schemas), where compose and the records adapter take them", () => {
    const source = readFileSync(join(ROOT, "src/decision.ts"), "utf8");
    assert.match(source, /export type Refusal\b/);
    assert.match(source, /export type Decision\b/);
    for (const folder of ["src/compose", "src/records"]) {
      assert.ok(projectImports(folder).some(({ to }) => to === "src/decision.ts"), `${folder} takes Refusal or Decision from src/decision.ts`);
    }
  });

  it("the records adapter (src/records: catalogue, snapshots, retry, reuse, errors) imports no command, push, start or CLI", () => {
    for (const file of ["catalogue", "snapshots", "retry", "reuse", "errors"]) assert.ok(existsSync(join(ROOT, `src/records/${file}.ts`)), `src/records/${file}.ts`);
    assert.deepEqual(reaching("src/records", ["src/commands", "src/push", "src/bootstrap", "src/cli", "src/up", "src/host", "src/controller", "src/serve"]), []);
  });

  it("only the shells that run the installer (src/cli, src/up) import installer/; domain constants live in src", () => {
    const folders = readdirSync(join(ROOT, "src")).filter((name) => statSync(join(ROOT, "src", name)).isDirectory() && name !== "cli" && name !== "up");
    assert.ok(folders.includes("push") && folders.includes("commands"));
    for (const folder of folders) assert.deepEqual(reaching(`src/${folder}`, ["installer"]), [], folder);
    const topLevel = readdirSync(join(ROOT, "src")).filter((name) => name.endsWith(".ts"))
      .flatMap((name) => importsOf(readFileSync(join(ROOT, "src", name), "utf8")).filter((s) => s.includes("installer/")).map((s) => `src/${name} imports ${s}`));
    assert.deepEqual(topLevel, []);
  });

  it("no import circle inside src/cli", () => {
    assert.deepEqual(circlesIn("src/cli"), []);
  });
});
