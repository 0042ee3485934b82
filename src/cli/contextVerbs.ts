/**
 * `mesh context list | current | use <name> | add <name> <file>`
 * (issue 29, as kubectl's): the named contexts of the user's configuration (contexts.ts).
 */
import { existsSync } from "node:fs";
import { DEFAULT_CREDENTIAL_FILE } from "../config.ts";
import { EXIT_OK, EXIT_REFUSED, UsageError, type CliContext } from "./context.ts";
import { configFileOf, readUserConfig, unknownContext, withContext, writeUserConfig, type MeshUserConfig } from "./contexts.ts";
import { formatData } from "./output.ts";
import { table } from "./render.ts";
import type { CliVerb } from "./busVerb.ts";
import { CONTEXT_NAME } from "../config.ts";

/** The user's configuration folder; a usage error when neither XDG_CONFIG_HOME nor HOME is set. */
function configDirOf(ctx: CliContext): string {
  if (ctx.config.configDir === undefined) throw new UsageError("config: no configuration folder: set HOME (or XDG_CONFIG_HOME)");
  return ctx.config.configDir;
}

/** Prints `value` as data under -o json|yaml|name, else `lines`. */
function print(ctx: CliContext, value: Record<string, unknown>, lines: readonly string[]): void {
  if (ctx.globals.json) for (const line of formatData(value, ctx.globals.output ?? "json")) ctx.out(line);
  else for (const line of lines) ctx.out(line);
}

/** `context list`'s rows: each context, `*` on the current one, its credential file and whether it exists. Pure but `exists`. */
export function contextRows(user: MeshUserConfig, exists: (file: string) => boolean): Array<Record<string, unknown>> {
  return Object.keys(user.contexts).sort().map((name) => ({
    current: name === user.currentContext ? "*" : "",
    name,
    credential: user.contexts[name]!.credential,
    found: exists(user.contexts[name]!.credential),
  }));
}

/** What this folder's own `.mesh/` does to the current context: it is dialled first (a line for stderr), or nothing. */
function folderNote(): string[] {
  return existsSync(DEFAULT_CREDENTIAL_FILE) ? [`(in this folder ${DEFAULT_CREDENTIAL_FILE} is dialled first: --context <name> picks a context here)`] : [];
}

const getContexts: CliVerb = {
  path: ["context", "list"],
  summary: "list the named contexts of your configuration (the current one marked *); a folder's own .mesh/ is dialled first",
  examples: [["every context", "mesh context list"]],
  globals: ["json"],
  run(ctx) {
    const dir = configDirOf(ctx);
    const user = readUserConfig(dir);
    const rows = contextRows(user, existsSync);
    print(ctx, { ok: true, file: configFileOf(dir), currentContext: user.currentContext ?? null, contexts: rows.map(({ current: _c, ...r }) => r) },
      rows.length === 0 ? [`no contexts in ${configFileOf(dir)}: \`mesh up\` or \`mesh genesis\` registers one, \`mesh context add <name> <credential-file>\` adds one`] : table(rows, ["current", "name", "credential", "found"]));
    if (!ctx.globals.json) for (const line of folderNote()) ctx.err(line);
    return Promise.resolve(EXIT_OK);
  },
};

const currentContext: CliVerb = {
  path: ["context", "current"],
  summary: "print the current context's name (exit 1 when none is set)",
  examples: [["which mesh verbs dial outside a folder with its own .mesh/", "mesh context current"]],
  globals: ["json"],
  run(ctx) {
    const user = readUserConfig(configDirOf(ctx));
    if (user.currentContext === undefined) {
      ctx.err("mesh: context current: no current context: `mesh context use <name>` sets one");
      if (ctx.globals.json) print(ctx, { ok: false, error: { code: "not-found", message: "no current context" } }, []);
      return Promise.resolve(EXIT_REFUSED);
    }
    print(ctx, { ok: true, currentContext: user.currentContext }, [user.currentContext]);
    if (!ctx.globals.json) for (const line of folderNote()) ctx.err(line);
    return Promise.resolve(EXIT_OK);
  },
};

const useContext: CliVerb = {
  path: ["context", "use"],
  summary: "make a named context the current one",
  examples: [["dial the mesh of context prod from now on", "mesh context use prod"]],
  arguments: [{ name: "name", description: "a context `mesh context list` lists" }],
  globals: ["json"],
  run(ctx, args) {
    const dir = configDirOf(ctx);
    const user = readUserConfig(dir);
    const name = String(args[0]);
    if (user.contexts[name] === undefined) throw unknownContext(name, "context use:", user);
    writeUserConfig(dir, { ...user, currentContext: name });
    print(ctx, { ok: true, currentContext: name }, [`switched to context ${name}`, ...folderNote()]);
    return Promise.resolve(EXIT_OK);
  },
};

const setContext: CliVerb = {
  path: ["context", "add"],
  summary: "add (or change) a named context: the operator credential file that dials its mesh; it becomes current",
  examples: [["the credential copied from the genesis host", "mesh context add prod ~/operator.json"]],
  arguments: [
    { name: "name", description: "the context's name: letters, digits, `.`, `_`, `@`, `-`" },
    { name: "credential-file", description: "the operator credential file (kept as an absolute path)" },
  ],
  globals: ["json"],
  run(ctx, args) {
    const dir = configDirOf(ctx);
    const name = String(args[0]);
    if (!CONTEXT_NAME.test(name)) throw new UsageError(`context add: <name>: ${JSON.stringify(name)}: letters, digits, \`.\`, \`_\`, \`@\` and \`-\`, starting with a letter or digit`);
    const updated = withContext(readUserConfig(dir), name, String(args[1]));
    writeUserConfig(dir, updated);
    print(ctx, { ok: true, currentContext: name, credential: updated.contexts[name]!.credential }, [`context ${name} (${updated.contexts[name]!.credential}) is now current`]);
    return Promise.resolve(EXIT_OK);
  },
};

/** The verbs of `mesh context`, registered in src/cli/verbs.ts. */
export const CONTEXT_CLI_VERBS: readonly CliVerb[] = [getContexts, currentContext, useContext, setContext];
