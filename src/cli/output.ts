/**
 * How `mesh` prints what a verb answers (`-o`, `--output`): readable lines (`text`, tables fitted
 * to the terminal), the same with every cell whole (`wide`), the reply as data (`json`, `yaml`),
 * or one `kind/name` per line (`name`). Defined once here for every verb; pure but printData.
 */
import { createRequire } from "node:module";

/**
 * yaml's `stringify`, loaded when a verb first prints YAML: the other formats (every verb's
 * default) do not pay for reading the library at each start (issue 29).
 */
function yamlStringify(value: unknown): string {
  const yaml = createRequire(import.meta.url)("yaml") as typeof import("yaml");
  return yaml.stringify(value);
}

/** The formats `-o` takes; `text` is the default (no `-o`). */
export const OUTPUT_FORMATS = ["text", "wide", "json", "yaml", "name"] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/** Whether a format prints the reply as data (json, yaml, name) instead of readable lines. */
export function isData(format: OutputFormat): boolean {
  return format === "json" || format === "yaml" || format === "name";
}

/** A value as the format prints it: JSON (two-space indent), YAML, or the names of what it lists. */
export function formatData(value: unknown, format: OutputFormat): string[] {
  if (format === "yaml") return [yamlStringify(value).trimEnd()];
  if (format === "name") return nameLines(value);
  return [JSON.stringify(value, null, 2)];
}

/**
 * The view tables are drawn for (render.ts View): stdout's columns on a terminal; no limit for
 * `-o wide` or when stdout is not a terminal (a pipe or a file gets every cell whole).
 */
export function viewOf(ctx: { io?: { stdout: { isTTY?: boolean; columns?: number } }; globals: { output?: OutputFormat } }): { width?: number } {
  const stdout = ctx.io?.stdout;
  if (ctx.globals.output === "wide" || stdout?.isTTY !== true || typeof stdout.columns !== "number" || stdout.columns <= 0) return {};
  return { width: stdout.columns };
}

/** Prints a value in the verb's chosen data format (`ctx.globals.output`), one write per line. */
export function printData(ctx: { globals: { output?: OutputFormat }; out(line: string): void }, value: unknown): void {
  for (const line of formatData(value, ctx.globals.output ?? "json")) ctx.out(line);
}

/** The kind of the items of a list field whose name is not its kind's plural (`where`'s `placed` are nodes). */
const LIST_KINDS: Readonly<Record<string, string>> = { placed: "node", processes: "process", results: "module" };
/** The fields that name an item, in the order they are tried. */
const NAME_FIELDS = ["name", "node", "module", "seat", "user", "file"] as const;
/** The fields that name what a command acted on, in the order they are tried, when the reply holds no list. */
const SUBJECT_FIELDS = ["module", "seat", "node"] as const;

type Row = Record<string, unknown>;
const isRow = (v: unknown): v is Row => v !== null && typeof v === "object" && !Array.isArray(v);

/** An item's name: its first NAME_FIELDS; a result wrapping a reply (`module register`'s) names what the reply names. */
function itemName(item: Row): string | undefined {
  if (isRow(item.reply)) return itemName(item.reply);
  for (const field of NAME_FIELDS) if (typeof item[field] === "string") return item[field];
  return undefined;
}

/**
 * `-o name`: one `kind/name` per item of every list the value holds (`nodes` → `node/alpha`), or,
 * when it holds none, the `kind/name` of what it is about (`assign`'s reply → `module/echo`: the
 * first of SUBJECT_FIELDS). Items without a name are left out.
 */
export function nameLines(value: unknown): string[] {
  if (!isRow(value)) return [];
  const lines: string[] = [];
  for (const [field, list] of Object.entries(value)) {
    const items = Array.isArray(list) ? list : isRow(list) && Object.values(list).every(isRow) ? Object.entries(list).map(([name, v]) => ({ name, ...(v as Row) })) : [];
    const kind = LIST_KINDS[field] ?? field.replace(/s$/, "");
    for (const item of items) {
      const name = isRow(item) ? itemName(item) : undefined;
      if (name !== undefined) lines.push(`${kind}/${name}`);
    }
  }
  if (lines.length > 0) return lines;
  for (const field of SUBJECT_FIELDS) if (typeof value[field] === "string") return [`${field}/${value[field]}`];
  return [];
}
