/**
 * `mesh examples` (issue 29): the example manifests travel with the package (package.json
 * "files"), so a walkthrough's `mesh module register examples/broker.json` runs on a machine
 * without the clone: `mesh examples` lists them, `mesh examples show <name>` prints one, and
 * `mesh examples --write <dir>` copies them all into a folder.
 */
import { mkdirSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { packageFile } from "../files/packageFiles.ts";
import { writeFileDurable } from "../files/index.ts";
import { EXIT_OK, verbUsageError } from "./context.ts";
import { formatData } from "./output.ts";
import { table } from "./render.ts";
import { closestName } from "../names.ts";
import type { CliVerb } from "./busVerb.ts";

/** The folder of the example manifests this package ships. */
export function examplesDir(): string {
  return packageFile("examples");
}

/** One example: its name (the file's, without `.json`), file, and what its manifest says it is. */
export type Example = { name: string; file: string; module: string; version: string; summary: string };

/** Every example manifest of `dir` (`*.json`), by name. Throws when the folder cannot be read. */
export function listExamples(dir: string = examplesDir()): Example[] {
  return readdirSync(dir).filter((f) => f.endsWith(".json")).sort().map((f) => {
    const manifest = JSON.parse(readFileSync(join(dir, f), "utf8")) as { name?: unknown; version?: unknown; seats?: Record<string, unknown>; claims?: unknown[]; uses?: unknown[] };
    const seats = Object.keys(manifest.seats ?? {});
    const summary = [seats.length ? `declares ${seats.join(", ")}` : "", manifest.uses?.length ? `uses ${manifest.uses.join(", ")}` : ""].filter(Boolean).join("; ");
    return { name: f.slice(0, -".json".length), file: join(dir, f), module: String(manifest.name), version: String(manifest.version), summary };
  });
}

/** The example named `name` (with or without `.json`); the verb's UsageError naming every example and the closest otherwise. */
export function exampleNamed(verb: string, name: string, dir: string = examplesDir()): Example {
  const all = listExamples(dir);
  const found = all.find((e) => e.name === name.replace(/\.json$/, ""));
  if (found !== undefined) return found;
  const near = closestName(name, all.map((e) => e.name));
  throw verbUsageError(verb, "<name>", `no example ${JSON.stringify(name)}${near === undefined ? "" : ` (did you mean ${near}?)`}: one of ${all.map((e) => e.name).join(", ")}`);
}

/** Copies `examples` into `dir` (made when missing), each durably; returns the files written. */
export function writeExamples(examples: readonly Example[], dir: string): string[] {
  mkdirSync(dir, { recursive: true });
  return examples.map((e) => {
    const to = join(dir, `${e.name}.json`);
    writeFileDurable(to, readFileSync(e.file), { mode: 0o644 });
    return to;
  });
}

const WRITE_OPTION = { flags: "--write <dir>", description: "copy every example manifest into this folder, made when missing" };

/** `mesh examples [--write <dir>]`. */
const examplesVerb: CliVerb = {
  path: ["examples"],
  summary: "list the example module manifests this package ships (`mesh examples show <name>` prints one; --write copies them)",
  examples: [
    ["the examples and what each declares", "mesh examples"],
    ["copy them here, then register two", "mesh examples --write examples && mesh module register examples/broker.json examples/packet-filter.json"],
  ],
  options: [WRITE_OPTION],
  globals: ["json"],
  run(ctx, _args, options) {
    const examples = listExamples();
    if (typeof options.write === "string") {
      const written = writeExamples(examples, options.write);
      if (ctx.globals.json) for (const line of formatData({ ok: true, written }, ctx.globals.output ?? "json")) ctx.out(line);
      else ctx.out(`wrote ${written.length} example manifests to ${options.write}: ${examples.map((e) => e.name).join(", ")}`);
      return Promise.resolve(EXIT_OK);
    }
    const rows = examples.map(({ file: _file, ...rest }) => rest);
    if (ctx.globals.json) for (const line of formatData({ ok: true, examples: rows, folder: examplesDir() }, ctx.globals.output ?? "json")) ctx.out(line);
    else for (const line of [...table(rows, ["name", "module", "version", "summary"]), `(in ${examplesDir()}; \`mesh examples --write <dir>\` copies them)`]) ctx.out(line);
    return Promise.resolve(EXIT_OK);
  },
};

/** `mesh examples show <name>`. */
const examplesShowVerb: CliVerb = {
  path: ["examples", "show"],
  summary: "print one example module manifest",
  examples: [["the broker's manifest", "mesh examples show broker"], ["into a file of your own", "mesh examples show broker > broker.json"]],
  arguments: [{ name: "name", description: "the example's name, as `mesh examples` lists it" }],
  run(ctx, args) {
    ctx.io.stdout.write(readFileSync(exampleNamed("examples show", String(args[0])).file, "utf8"));
    return Promise.resolve(EXIT_OK);
  },
};

/** The verbs of the shipped examples, registered in src/cli/verbs.ts. */
export const EXAMPLES_CLI_VERBS: readonly CliVerb[] = [examplesVerb, examplesShowVerb];
