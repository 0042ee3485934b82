/**
 * `mesh describe <kind> <name>` (issue 29, as kubectl's): one item of a kind the records hold in
 * full, readable, with its newest events from the records (the `history` verb) and, for a node,
 * its last report (R55). `-o json|yaml` print the same as data.
 */
import { clientOf, EXIT_OK, QUERY_GLOBALS, type CliContext } from "./context.ts";
import { formatData, viewOf } from "./output.ts";
import { GET_KINDS, describeLines, getKind, historyEntity, itemName, type Described } from "./getKinds.ts";
import { printRefusal, readItems } from "./get.ts";
import type { CliVerb } from "./busVerb.ts";

/** The newest events `describe` shows; `mesh history` shows more. */
export const DESCRIBE_HISTORY = 10;

/** `mesh describe`. */
export const DESCRIBE_CLI_VERB: CliVerb = {
  path: ["describe"],
  summary: `show one item of a kind the records hold in full, with its newest events (a node: its last report too): ${GET_KINDS.join(", ")}`,
  examples: [
    ["node alpha: its modules, overlay place, last report and newest events", "mesh describe node alpha"],
    ["module broker as JSON", "mesh describe module broker -o json"],
  ],
  arguments: [
    { name: "kind", description: `${GET_KINDS.join(", ")} (or their plurals)` },
    { name: "name", description: "the item's name (a credential's: its bus user; a push's: its id)" },
  ],
  globals: QUERY_GLOBALS,
  async run(ctx: CliContext, args) {
    const kind = getKind("describe", String(args[0]));
    const name = String(args[1]);
    const client = await clientOf(ctx);
    const read = await readItems(client, kind, name);
    if (!read.ok) return printRefusal(ctx, "describe", read.error);
    const item = read.items[0]!;
    const entity = historyEntity(kind, item);
    // A push's own commits are what it is: every one; any other item's newest few.
    const history = await client.history({ ...entity, ...(kind === "push" ? {} : { limit: DESCRIBE_HISTORY }) });
    const described: Described = { kind, item, history: history.ok ? { events: history.events, total: history.total } : null };
    if (ctx.globals.json) {
      const output = ctx.globals.output ?? "json";
      const lines = output === "name"
        ? [`${kind}/${itemName(kind, item)}`]
        : formatData({ ok: true, [kind]: item, history: described.history?.events ?? [], historyTotal: described.history?.total ?? 0 }, output);
      for (const line of lines) ctx.out(line);
    } else {
      for (const line of describeLines(described, viewOf(ctx))) ctx.out(line);
    }
    return EXIT_OK;
  },
};
