import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { importsOf, tsFiles } from "../support/sources.ts";

/**
 * How the folders of src/ lean on each other (issue 12): the schemas, the pure core and the types
 * every decide returns sit below the adapters and the shells, and the adapters start and push
 * share (raise, the controller's credential: src/controller) sit below both, so push never reaches
 * into the start. Read from the imports in the source, so a new file is checked the day it is added.
 */
const ROOT = resolve(import.meta.dirname, "../..");


/** Each project file imported by a file under `folder` (relative to the repository: `src/push/push.ts`), by importer. */
function projectImports(folder: string): Array<{ from: string; to: string }> {
  return tsFiles(join(ROOT, folder)).flatMap((path) =>
    importsOf(readFileSync(path, "utf8"))
      .filter((specifier) => specifier.startsWith("."))
      .map((specifier) => ({ from: relative(ROOT, path), to: relative(ROOT, resolve(dirname(path), specifier)).split("\\").join("/") })));
}

/** The imports of files under `folder` that reach into any of `forbidden` (folders or files, repository-relative). */
function reaching(folder: string, forbidden: readonly string[]): string[] {
  return projectImports(folder)
    .filter(({ to }) => forbidden.some((f) => to === f || to.startsWith(`${f}/`)))
    .map(({ from, to }) => `${from} imports ${to}`);
}

/** Everything above the pure core: the adapters and the shells. */
const ABOVE_THE_CORE = ["src/commands", "src/push", "src/bootstrap", "src/cli", "src/up", "src/host", "src/records", "src/controller", "src/bus", "src/files", "installer"];

describe("layering of src/", () => {
  it("the checker sees what it must (so the tests below can fail)", () => {
    const imports = projectImports("src/push");
    assert.ok(imports.some(({ from, to }) => from === "src/push/context.ts" && to === "src/records/catalogue.ts"), "push's imports are read and resolved");
    assert.deepEqual(reaching("src/push", ["src/records"]).length > 0, true);
  });

  it("src/events (the schemas) imports no adapter: nothing but its own files, src/names.ts and the manifest schema", () => {
    const outside = projectImports("src/events").filter(({ to }) => !to.startsWith("src/events/") && to !== "src/names.ts" && to !== "src/manifest/manifest.ts");
    assert.deepEqual(outside.map(({ from, to }) => `${from} imports ${to}`), []);
    assert.deepEqual(reaching("src/events", ["src/records"]), []);
  });

  it("push does not import the start (src/bootstrap): what both use (raise, the controller's credential) is in src/controller", () => {
    assert.deepEqual(reaching("src/push", ["src/bootstrap"]), []);
    assert.deepEqual(reaching("src/controller", ["src/bootstrap", "src/push"]), []);
  });

  it("events, projections and compose import nothing from the commands, the adapters or the shells", () => {
    for (const folder of ["src/events", "src/projections", "src/compose"]) assert.deepEqual(reaching(folder, ABOVE_THE_CORE), [], folder);
  });

  it("Refusal and Decision live below the commands (src/decision.ts, importing only the event schemas), where compose and the records adapter take them", () => {
    const source = readFileSync(join(ROOT, "src/decision.ts"), "utf8");
    assert.match(source, /export type Refusal\b/);
    assert.match(source, /export type Decision\b/);
    const imports = projectImports("src").filter(({ from }) => from === "src/decision.ts");
    assert.deepEqual(imports.filter(({ to }) => !to.startsWith("src/events/")), []);
    for (const folder of ["src/compose", "src/records"]) {
      assert.ok(projectImports(folder).some(({ to }) => to === "src/decision.ts"), `${folder} takes Refusal or Decision from src/decision.ts`);
    }
  });

  it("the records adapter (src/records: catalogue, snapshots, retry, reuse, errors) imports no command, push, start or CLI", () => {
    for (const file of ["catalogue", "snapshots", "retry", "reuse", "errors"]) assert.ok(existsSync(join(ROOT, `src/records/${file}.ts`)), `src/records/${file}.ts`);
    assert.deepEqual(reaching("src/records", ["src/commands", "src/push", "src/bootstrap", "src/cli", "src/up", "src/host", "src/controller"]), []);
  });

  it("only the shells that run the installer (src/cli, src/up) import installer/; domain constants live in src", () => {
    const folders = readdirSync(join(ROOT, "src")).filter((name) => statSync(join(ROOT, "src", name)).isDirectory() && name !== "cli" && name !== "up");
    assert.ok(folders.includes("push") && folders.includes("commands"));
    for (const folder of folders) assert.deepEqual(reaching(`src/${folder}`, ["installer"]), [], folder);
    const topLevel = readdirSync(join(ROOT, "src")).filter((name) => name.endsWith(".ts"))
      .flatMap((name) => importsOf(readFileSync(join(ROOT, "src", name), "utf8")).filter((s) => s.includes("installer/")).map((s) => `src/${name} imports ${s}`));
    assert.deepEqual(topLevel, []);
  });
});
