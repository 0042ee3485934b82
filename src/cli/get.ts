/**
 * `mesh get <kind> [name]` (issue 29, as kubectl's): every item of a kind the records hold, or one,
 * read from the controller's list verbs (a node with its last report, R55); a push, which has no
 * list, by its id from its history. `-o json|yaml|wide|name` and `--watch` as every list.
 */
import { clientOf, EXIT_OK, EXIT_REFUSED, QUERY_GLOBALS, type CliContext } from "./context.ts";
import type { MeshClient } from "../client/client.ts";
import type { NodeView, Refusal } from "../contracts/verbs.ts";
import { lastReportOf, reportsOf } from "./lastReport.ts";
import { formatData, viewOf } from "./output.ts";
import { GET_KINDS, KIND_SPECS, getKind, getNames, getTable, itemName, notFoundOf, pushOf, type GetKind } from "./getKinds.ts";
import { WATCH_OPTION, watchChanges } from "./watch.ts";
import type { CliVerb } from "./busVerb.ts";

type Row = Record<string, unknown>;

/** Items of a kind as read, or the refusal that stopped the read. */
export type Read = { ok: true; items: Row[] } | { ok: false; error: Refusal };

/** Every node with its last report (`lastReport`, as `mesh nodes` gives it), or the refusal. */
async function nodesWithReports(client: MeshClient): Promise<Read> {
  const reply = await client.everyPage("nodes");
  if (!reply.ok) return reply;
  const found = await reportsOf(client, reply.nodes.map((n) => n.name));
  return { ok: true, items: reply.nodes.map((n: NodeView) => ({ ...n, lastReport: found === null ? null : lastReportOf(n.lastSent?.digest, found.get(n.name)) })) };
}

/**
 * Every item of `kind` (each list verb's every page, R59), or only the one named `name` (a push:
 * by its id, from its history). A name that is none is refused `not-found`, naming the closest.
 */
export async function readItems(client: MeshClient, kind: GetKind, name?: string): Promise<Read> {
  if (kind === "push") {
    if (name === undefined) return { ok: false, error: { code: "name-required", message: "pushes are read one at a time: mesh get push <id> (a push's id is in `mesh push`'s output and in `mesh history node <name>`)" } };
    const history = await client.history({ kind: "push", id: name });
    if (!history.ok) return history.error.code === "not-found" ? { ok: false, error: notFoundOf(kind, name, []) } : history;
    return { ok: true, items: [pushOf(name, history.events)] };
  }
  const read: Read = kind === "node" ? await nodesWithReports(client) : await listOf(client, kind);
  if (!read.ok || name === undefined) return read;
  const item = read.items.find((i) => itemName(kind, i) === name);
  return item === undefined ? { ok: false, error: notFoundOf(kind, name, read.items) } : { ok: true, items: [item] };
}

async function listOf(client: MeshClient, kind: Exclude<GetKind, "push" | "node">): Promise<Read> {
  const verb = KIND_SPECS[kind].list!;
  const reply = await client.everyPage(verb);
  if (!reply.ok) return reply;
  return { ok: true, items: (reply as unknown as Row)[`${kind}s`] as Row[] };
}

/**
 * Prints a refusal as every verb does (src/cli/verbs.ts report): `{ ok: false, error }` under a
 * data format, one line on stderr always; exit 1.
 */
export function printRefusal(ctx: CliContext, verb: string, error: Refusal): number {
  if (ctx.globals.json) for (const line of formatData({ ok: false, error }, ctx.globals.output ?? "json")) ctx.out(line);
  ctx.err(`mesh ${verb}: refused (${error.code}): ${error.message}`);
  return EXIT_REFUSED;
}

/**
 * What `get` prints of what it read: a table (text, wide), `kind/name` lines (name), or data
 * (json, yaml): the list as its list verb's field (`{ ok, nodes: [...] }`), one item under its
 * kind (`{ ok, node: {...} }`). Pure.
 */
export function getOutput(ctx: Parameters<typeof viewOf>[0], kind: GetKind, items: readonly Row[], one: boolean): string[] {
  const output = ctx.globals.output ?? "text";
  if (output === "name") return getNames(kind, items);
  if (output === "json" || output === "yaml") return formatData(one ? { ok: true, [kind]: items[0] } : { ok: true, [`${kind}s`]: items }, output);
  return getTable(kind, items, viewOf(ctx));
}

/** Reads and prints once; the exit code. */
async function getOnce(ctx: CliContext, kind: GetKind, name: string | undefined): Promise<number> {
  const read = await readItems(await clientOf(ctx), kind, name);
  if (!read.ok) return printRefusal(ctx, "get", read.error);
  for (const line of getOutput(ctx, kind, read.items, name !== undefined)) ctx.out(line);
  return EXIT_OK;
}

/** `mesh get`. */
export const GET_CLI_VERB: CliVerb = {
  path: ["get"],
  summary: `show every item of a kind the records hold, or one: ${GET_KINDS.join(", ")}`,
  examples: [
    ["every node, its modules and last report", "mesh get nodes"],
    ["one module, as YAML", "mesh get module broker -o yaml"],
    ["one push, by the id `mesh push` printed", "mesh get push <push-id>"],
    ["watch the seats change as commands land", "mesh get seats --watch"],
  ],
  arguments: [
    { name: "kind", description: `${GET_KINDS.join(", ")} (or their plurals)` },
    { name: "name", description: "the item's name (a credential's: its bus user; a push's: its id); every item when left out", optional: true },
  ],
  options: [WATCH_OPTION],
  globals: QUERY_GLOBALS,
  async run(ctx, args, options) {
    const kind = getKind("get", String(args[0]));
    const name = typeof args[1] === "string" ? args[1] : undefined;
    if (options.watch !== true) return getOnce(ctx, kind, name);
    return watchChanges(ctx, await ctx.connection(), () => getOnce(ctx, kind, name));
  },
};
