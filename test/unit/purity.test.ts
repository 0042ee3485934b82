import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { importsOf, stripComments, tsFiles } from "../support/sources.ts";

/**
 * Pure code (decide, evolve, compose) imports no @nats-io/* and no node:*, and reads no clock and
 * no randomness (STYLE.md 4, DESIGN.md section 3). Read from the source, so a new file is checked
 * the day it is added.
 */
const ROOT = resolve(import.meta.dirname, "../..");


/**
 * The pure files: src/projections, src/compose and src/contracts (all of them), src/commands/*.ts but its server
 * and handlers, and every plan (a file named plan*.ts anywhere under src: what a shell carries out).
 */
function pureFiles(): string[] {
  return [
    ...tsFiles(join(ROOT, "src/projections"), true),
    ...tsFiles(join(ROOT, "src/compose"), true),
    ...tsFiles(join(ROOT, "src/contracts"), true),
    ...tsFiles(join(ROOT, "src/commands"), false).filter((path) => !/server|handler/i.test(path.split("/").pop()!)),
    ...tsFiles(join(ROOT, "src"), true).filter((path) => /^plan\w*\.ts$/.test(path.split("/").pop()!)),
  ].sort();
}

/** What makes a source impure: forbidden imports and reads of the clock or of randomness. */
export function impurities(source: string): string[] {
  const problems = importsOf(source)
    .filter((specifier) => specifier.startsWith("@nats-io/") || specifier.startsWith("node:"))
    .map((specifier) => `imports ${specifier}`);
  const code = stripComments(source);
  for (const [pattern, what] of [[/\bDate\.now\b/, "Date.now"], [/\bMath\.random\b/, "Math.random"], [/\bnew\s+Date\s*\(/, "new Date("]] as const) {
    if (pattern.test(code)) problems.push(`uses ${what}`);
  }
  return problems;
}

describe("purity of decide, evolve and compose", () => {
  it("the checker sees what it must (so the test below can fail)", () => {
    assert.deepEqual(impurities(`import { connect } from "@nats-io/transport-node";`), ["imports @nats-io/transport-node"]);
    assert.deepEqual(impurities(`import type { X } from "node:fs";\nexport { y } from "node:path";`), ["imports node:fs", "imports node:path"]);
    assert.deepEqual(impurities(`const t = Date.now();`), ["uses Date.now"]);
    assert.deepEqual(impurities(`const r = Math.random() * 2;`), ["uses Math.random"]);
    assert.deepEqual(impurities(`const d = new Date ("2026");`), ["uses new Date("]);
    assert.deepEqual(impurities(`// Date.now is not read here\n/* nor Math.random */\nconst a = "tls://host:1";`), []);
    assert.deepEqual(importsOf(`const m = await import("node:os");`), ["node:os"]);
  });

  it("files under src/projections, src/compose and src/commands (but its server and handlers), and the plans (plan*.ts), import no @nats-io/* or node:* and read no clock or randomness", () => {
    const files = pureFiles();
    assert.ok(files.some((path) => path.endsWith("src/projections/state.ts")), "the projections are found");
    assert.ok(files.some((path) => path.endsWith("src/push/plan.ts")), "the plans are found");
    const problems: string[] = [];
    for (const path of files) {
      for (const problem of impurities(readFileSync(path, "utf8"))) problems.push(`${path.slice(ROOT.length + 1)}: ${problem}`);
    }
    assert.deepEqual(problems, []);
  });

  it("what pure files import from the project is pure too (followed transitively)", () => {
    const seen = new Set<string>();
    const problems: string[] = [];
    const visit = (path: string, from: string) => {
      if (seen.has(path)) return;
      seen.add(path);
      if (!existsSync(path)) return; // a missing file is the type-checker's to report
      const source = readFileSync(path, "utf8");
      for (const problem of impurities(source)) problems.push(`${path.slice(ROOT.length + 1)} (imported by ${from}): ${problem}`);
      for (const specifier of importsOf(source)) {
        if (specifier.startsWith(".")) visit(resolve(dirname(path), specifier), path.slice(ROOT.length + 1));
      }
    };
    for (const path of pureFiles()) visit(path, "itself");
    assert.deepEqual(problems, []);
  });
});
