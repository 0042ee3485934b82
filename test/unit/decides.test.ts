import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { stripComments, tsFiles } from "../support/sources.ts";

/**
 * Every decision is a decide (issue 12): an event is built only inside a pure decide under
 * src/commands (one file per command, the server and handlers excepted), where it is unit-tested
 * without a server. The shell (push, start, replay, the command server, the installer's genesis) only calls
 * `transact(id, state => decideX(state, input, envelope))`. Read from the source, so a new file is
 * checked the day it is added.
 */
const ROOT = resolve(import.meta.dirname, "../..");
const SRC = join(ROOT, "src");


/** The event names: one schema file per event in src/events, named as the event (STYLE.md 1). */
function eventNames(): string[] {
  return readdirSync(join(SRC, "events")).filter((name) => /^[A-Z]\w*\.ts$/.test(name)).map((name) => name.slice(0, -3)).sort();
}

/** Where the decides live: src/commands/*.ts (not its subfolders), the server and handlers excepted. */
function isDecideFile(path: string): boolean {
  const rel = relative(SRC, path).split("\\").join("/");
  return /^commands\/[^/]+\.ts$/.test(rel) && !/server|handler/i.test(rel);
}

/**
 * Where `source` builds an event: an object literal with `type: "<Event>"`, a value typed or
 * checked as an event (`: NodeEnrolled = {`, `satisfies MeshEvent`), or an event schema's parse
 * of a literal (`NodeEnrolled.parse({`). Comments are ignored; a `case "NodeEnrolled":` is a read.
 */
export function eventsBuilt(source: string, events: readonly string[]): string[] {
  const code = stripComments(source);
  const names = [...events, "MeshEvent"].join("|");
  const found: string[] = [];
  const patterns: Array<[RegExp, (m: RegExpMatchArray) => string]> = [
    [new RegExp(`["']?\\btype["']?\\s*:\\s*["'](${events.join("|")})["']`, "g"), (m) => `${m[1]} literal`],
    [new RegExp(`:\\s*(${names})\\s*=\\s*\\{`, "g"), (m) => `${m[1]} typed literal`],
    [new RegExp(`\\bsatisfies\\s+(${names})\\b`, "g"), (m) => `${m[1]} satisfies`],
    [new RegExp(`\\b(${names})\\.parse\\(\\s*\\{`, "g"), (m) => `${m[1]} parse of a literal`],
  ];
  for (const [pattern, what] of patterns) for (const match of code.matchAll(pattern)) found.push(what(match));
  return found;
}

describe("every decision is a decide", () => {
  it("the scanner sees what it must (so the test below can fail)", () => {
    const events = ["DeclarationSent", "NodeEnrolled"];
    assert.deepEqual(eventsBuilt(`events.push({ ...meta, type: "DeclarationSent", node });`, events), ["DeclarationSent literal"]);
    assert.deepEqual(eventsBuilt(`const e: NodeEnrolled = { type, node };`, events), ["NodeEnrolled typed literal"]);
    assert.deepEqual(eventsBuilt(`const e = { node } satisfies MeshEvent;`, events), ["MeshEvent satisfies"]);
    assert.deepEqual(eventsBuilt(`NodeEnrolled.parse({ node });`, events), ["NodeEnrolled parse of a literal"]);
    assert.deepEqual(eventsBuilt(`// type: "DeclarationSent"\nswitch (e.type) { case "NodeEnrolled": break; }\nif (e.type === "DeclarationSent") {}`, events), []);
    assert.ok(eventNames().includes("DeclarationSent") && eventNames().includes("CredentialRotated"), "the event names are found");
  });

  it("R14 R31: no event is built outside a decide (src/commands/*.ts but its server and handlers), in src/ and installer/", () => {
    const events = eventNames();
    const problems: string[] = [];
    const files = [...tsFiles(SRC), ...tsFiles(join(ROOT, "installer"))];
    assert.ok(files.some((path) => path.endsWith("src/push/push.ts")) && files.some((path) => path.endsWith("installer/genesis.ts")), "the sources are found");
    for (const path of files) {
      if (isDecideFile(path) || relative(SRC, path).startsWith("events")) continue;
      for (const built of eventsBuilt(readFileSync(path, "utf8"), events)) problems.push(`${relative(ROOT, path)}: builds ${built}`);
    }
    assert.deepEqual(problems, []);
  });
});
