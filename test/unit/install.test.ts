import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { runCli } from "../../src/cli/run.ts";
import { EXIT_USAGE, type CliIo } from "../../src/cli/context.ts";

const REPO = fileURLToPath(new URL("../../", import.meta.url));

/** Every .ts/.js file under `dir` (recursive). */
function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return /\.(ts|js)$/.test(name) ? [path] : [];
  });
}

/** The packages a file imports at run time (`import type` is erased and needs nothing installed). */
function runtimePackages(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const packages: string[] = [];
  for (const match of text.matchAll(/^\s*import\s+(?!type\s)[^;]*?from\s+"([^"]+)"/gms)) {
    const specifier = match[1]!;
    if (specifier.startsWith(".") || specifier.startsWith("node:") || builtinModules.includes(specifier)) continue;
    packages.push(specifier.startsWith("@") ? specifier.split("/").slice(0, 2).join("/") : specifier.split("/")[0]!);
  }
  return packages;
}

describe("mesh installable the way Node tools are", () => {
  it("R56: every package the `mesh` launcher and the code it runs import at run time is a dependency (an install without dev dependencies runs `mesh`)", () => {
    const manifest = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { dependencies: Record<string, string>; bin: Record<string, string> };
    assert.equal(manifest.bin.mesh, "./bin/mesh.js");
    const files = [join(REPO, "bin", "mesh.js"), ...sources(join(REPO, "src")), ...sources(join(REPO, "installer"))];
    const missing = new Set<string>();
    for (const file of files) for (const name of runtimePackages(file)) if (!(name in manifest.dependencies)) missing.add(`${name} (${file.slice(REPO.length)})`);
    assert.deepEqual([...missing], []);
  });

  it("R56: `mesh controller` without its settings points at controller.env and --env", async () => {
    let err = "";
    const io: CliIo = { stdout: { write: () => undefined }, stderr: { write: (s: string) => { err += s; } }, env: {} };
    const code = await runCli(["controller"], io);
    assert.equal(code, EXIT_USAGE);
    assert.match(err, /controller\.env/);
    assert.match(err, /--env/);
  });
});
