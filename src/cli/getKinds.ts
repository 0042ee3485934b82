/**
 * The kinds `mesh get` and `mesh describe` show (issue 29: kubectl's `get <kind> [name]` and
 * `describe <kind> <name>`), each read from the controller's own list verb, and how one is named,
 * found and drawn. Pure: the verbs that ask the controller are get.ts and describe.ts.
 */
import { closestName, type EntityKind } from "../names.ts";
import type { HistoryEntry } from "../contracts/verbs.ts";
import type { ListVerb } from "../client/client.ts";
import { lastReportText, type NodeLastReport } from "./lastReport.ts";
import { table, type View } from "./render.ts";
import { verbUsageError } from "./context.ts";

/** Every kind the records hold that `get` and `describe` show, in the order help names them. */
export const GET_KINDS = ["node", "module", "seat", "credential", "push"] as const;
export type GetKind = (typeof GET_KINDS)[number];

type Row = Record<string, unknown>;

/** How each kind is read: its list verb (push has none: read by id from its history) and its table's columns. */
export const KIND_SPECS: Readonly<Record<GetKind, { list: ListVerb | null; columns: readonly string[] }>> = {
  node: { list: "nodes", columns: ["name", "overlayName", "hub", "modules", "credentialAddress", "lastReport"] },
  module: { list: "modules", columns: ["name", "version", "issued", "nodes", "declares", "claims"] },
  seat: { list: "seats", columns: ["name", "declaredBy", "protocol", "accepts", "emits", "holders", "aliases"] },
  credential: { list: "credentials", columns: ["user", "principal", "address", "mintedAt"] },
  push: { list: null, columns: ["id", "at", "actor", "sent", "provisions"] },
};

/**
 * The kind `word` names: one of GET_KINDS, or its plural (`nodes`). Throws the verb's UsageError
 * naming every kind and the closest one otherwise (exit 2, as every mistyped argument).
 */
export function getKind(verb: string, word: string): GetKind {
  const singular = word.endsWith("s") && (GET_KINDS as readonly string[]).includes(word.slice(0, -1)) ? word.slice(0, -1) : word;
  if ((GET_KINDS as readonly string[]).includes(singular)) return singular as GetKind;
  const near = closestName(word, GET_KINDS);
  throw verbUsageError(verb, "<kind>", `${JSON.stringify(word)} is not a kind the records hold: give one of ${GET_KINDS.join(", ")}${near === undefined ? "" : ` (did you mean ${near}?)`}`);
}

/** The name an item of `kind` is asked for by: a credential's bus user, a push's id, every other item's `name`. */
export function itemName(kind: GetKind, item: Row): string {
  return String(kind === "credential" ? item.user : kind === "push" ? item.id : item.name);
}

/** The history an item's `describe` shows: the entity the records file it under (a credential: its principal's). */
export function historyEntity(kind: GetKind, item: Row): { kind: EntityKind; id: string } {
  if (kind === "credential") {
    const principal = item.principal as { kind: EntityKind; name: string };
    return { kind: principal.kind, id: principal.name };
  }
  return { kind, id: itemName(kind, item) };
}

/** The not-found refusal of a name no item of `kind` has, naming the closest one when there is one. Pure. */
export function notFoundOf(kind: GetKind, name: string, items: readonly Row[]): { code: "not-found"; message: string } {
  const near = closestName(name, items.map((i) => itemName(kind, i)));
  const list = kind === "push" ? "a push's id is in `mesh push`'s output and in `mesh history node <name>`" : `\`mesh get ${kind}\` lists them`;
  return { code: "not-found", message: `no ${kind} ${JSON.stringify(name)}${near === undefined ? "" : ` (did you mean ${near}?)`}: ${list}` };
}

/**
 * A push as its history tells it (push entity `id`): when and by whom, the nodes it sent a
 * declaration (`sent`) and how many provisions it minted. Pure.
 */
export function pushOf(id: string, events: readonly HistoryEntry[]): Row {
  const sent = events.filter((e) => e.type === "DeclarationSent").map((e) => String(e.details.node));
  return { id, at: events[0]?.at ?? null, actor: events[0]?.actor ?? null, sent, provisions: events.filter((e) => e.type === "ProvisionMinted").length };
}

/** A node's row with its last report in one line, as `mesh nodes` shows it. */
function shownRow(kind: GetKind, item: Row): Row {
  if (kind !== "node") return item;
  return { ...item, lastReport: lastReportText((item.lastReport ?? null) as NodeLastReport | null, (item.lastSent as { digest?: string } | null)?.digest) };
}

/** `mesh get <kind> [name]`'s table (text and wide): the kind's columns, one row per item. Pure. */
export function getTable(kind: GetKind, items: readonly Row[], view: View = {}): string[] {
  return table(items.map((i) => shownRow(kind, i)), KIND_SPECS[kind].columns, view.width);
}

/** `-o name`: `kind/name` per item. Pure. */
export function getNames(kind: GetKind, items: readonly Row[]): string[] {
  return items.map((i) => `${kind}/${itemName(kind, i)}`);
}

/** What `describe` shows of one item: the item, its newest history, and for a node its last report. */
export type Described = {
  kind: GetKind;
  item: Row;
  history: { events: HistoryEntry[]; total: number } | null;
};

/** A value on one line of describe: lists joined, objects as `key=value`, empty as `-`. */
function valueText(value: unknown): string {
  if (value === null || value === undefined || value === "") return "-";
  if (Array.isArray(value)) return value.length === 0 ? "-" : value.map(valueText).join(", ");
  if (typeof value === "object") {
    const v = value as Row;
    if (typeof v.kind === "string" && typeof v.name === "string" && Object.keys(v).length === 2) return `${v.kind} ${v.name}`;
    if (typeof v.seat === "string" && typeof v.event === "string" && Object.keys(v).length === 2) return `${v.seat}/${v.event}`;
    return Object.entries(v).map(([k, x]) => `${k}=${valueText(x)}`).join(" ");
  }
  return String(value);
}

/**
 * A field of `describe` as its lines: `  Label:  value`, and a list of two or more records (a
 * report's modules) one record a line, aligned under the first, not one line of them all.
 */
function fieldLines(field: string, value: unknown, width: number): string[] {
  const head = `  ${`${label(field)}:`.padEnd(width)}`;
  const records = Array.isArray(value) && value.length > 1 && value.every((x) => typeof x === "object" && x !== null && valueText(x).includes("="));
  if (!records) return [`${head}${valueText(value)}`];
  return (value as unknown[]).map((x, i) => `${i === 0 ? head : " ".repeat(head.length)}${valueText(x)}`);
}

/** A field's label: its words, first letter capital (`overlayName` → `Overlay name`). */
function label(field: string): string {
  const words = field.replace(/([a-z0-9])([A-Z])/g, "$1 $2").toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/**
 * `mesh describe <kind> <name>`: every field of the item as `Label: value`, a node's last report in
 * full, then its newest events (oldest first) or why there are none. Pure.
 */
export function describeLines(described: Described, view: View = {}): string[] {
  const { kind, item } = described;
  const fields = Object.entries(item).filter(([k]) => k !== "lastReport");
  const width = Math.max(...fields.map(([k]) => label(k).length)) + 2;
  const lines = [`${label(kind)} ${itemName(kind, item)}`, ...fields.flatMap(([k, v]) => fieldLines(k, v, width))];
  if (kind === "node") {
    const last = (item.lastReport ?? null) as NodeLastReport | null;
    lines.push("", "Last report:");
    if (last === null) lines.push(`  ${lastReportText(null, (item.lastSent as { digest?: string } | null)?.digest)}`.replace(/^ {2}-$/, "  none"));
    else lines.push(...Object.entries(last).flatMap(([k, v]) => fieldLines(k, v, width)));
  }
  const history = described.history;
  if (history === null) return lines;
  lines.push("", history.events.length < history.total ? `History (the newest ${history.events.length} of ${history.total}; mesh history for more):` : "History:");
  const indented = view.width === undefined ? undefined : view.width - 2;
  lines.push(...(history.events.length === 0 ? ["(none)"] : table(history.events, ["sequence", "at", "actor", "summary"], indented)).map((l) => `  ${l}`));
  return lines;
}
