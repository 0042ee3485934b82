/**
 * Readable output of replies: short lines and aligned tables. `--json` bypasses all of this.
 * Pure functions from a reply (plain JSON) to lines.
 */

import type { Omitted } from "../commands/fit.ts";
import { HISTORY_LIMIT } from "../contracts/verbs.ts";

/** R60: the lines of a push's servers, used by `mesh push` and `mesh up` alike (they live below both). */
export { missedServerLine, serverLines, type ServerLine } from "../push/serverLines.ts";
export { shortDigest } from "../contracts/declaration.ts";
type Row = Record<string, unknown>;

/**
 * The one title of each concept that appears in more than one table (`mesh seats`, `mesh nodes`,
 * `mesh credentials`, the summary of `mesh up`), so the same thing is spelled the same everywhere.
 */
export const COLUMN_TITLES: Readonly<Record<string, string>> = {
  holders: "HELD BY",
  credentialAddress: "ADDRESS",
  address: "ADDRESS",
  overlayName: "OVERLAY",
  overlay: "OVERLAY",
};

/** A column's title: COLUMN_TITLES, else the field's words in capitals (`declaredBy` → `DECLARED BY`). */
export function columnTitle(field: string): string {
  return COLUMN_TITLES[field] ?? field.replace(/([a-z0-9])([A-Z])/g, "$1 $2").toUpperCase();
}

/**
 * What a renderer draws for: `width`, the columns a table may take (stdout's on a terminal; none
 * for `-o wide` or a pipe, viewOf in output.ts). Absent: no limit.
 */
export type View = { width?: number };

/** The narrowest a cut column gets: its title, or this many characters when the title is shorter. */
const MIN_COLUMN = 5;
/** The spaces between two columns. */
const GAP = 2;

/**
 * Column widths that fit `limit` (gaps included): the widest column is narrowed first, one
 * character at a time, none below its floor (`floors`). Wider than `limit` only when every column
 * is at its floor. Pure.
 */
export function fitWidths(widths: readonly number[], floors: readonly number[], limit: number): number[] {
  const fitted = [...widths];
  let total = fitted.reduce((a, b) => a + b, 0) + GAP * (fitted.length - 1);
  while (total > limit) {
    let widest = -1;
    for (let i = 0; i < fitted.length; i++) if (fitted[i]! > floors[i]! && (widest < 0 || fitted[i]! > fitted[widest]!)) widest = i;
    if (widest < 0) break;
    fitted[widest]! -= 1;
    total -= 1;
  }
  return fitted;
}

/** A cell cut to `width` characters, its last one an ellipsis when it was longer. */
function cut(value: string, width: number): string {
  return value.length <= width ? value : `${value.slice(0, Math.max(0, width - 1))}…`;
}

/**
 * Aligned columns with a header row; cells are strings, arrays joined by commas, empty as "-".
 * Given `width`, the table fits it (issue 29): the longest cells are cut, ending with an ellipsis.
 */
export function table(rows: readonly Row[], columns: readonly string[], width?: number): string[] {
  if (rows.length === 0) return ["(none)"];
  const titles = columns.map(columnTitle);
  const whole = rows.map((row) => columns.map((c) => cell(row[c])));
  const natural = titles.map((c, i) => Math.max(c.length, ...whole.map((r) => r[i]!.length)));
  const widths = width === undefined ? natural : fitWidths(natural, titles.map((t, i) => Math.min(natural[i]!, Math.max(t.length, MIN_COLUMN))), width);
  const cells = whole.map((r) => r.map((v, i) => cut(v, widths[i]!)));
  const line = (values: readonly string[]) => values.map((v, i) => (i === values.length - 1 ? v : v.padEnd(widths[i]!))).join(" ".repeat(GAP)).trimEnd();
  return [line(titles), ...cells.map(line)];
}

function cell(value: unknown): string {
  if (value === null || value === undefined || value === "") return "-";
  if (Array.isArray(value)) return value.length === 0 ? "-" : value.map(cell).join(",");
  if (typeof value === "object") {
    const v = value as Row;
    if (typeof v.kind === "string" && typeof v.name === "string") return `${v.kind}:${v.name}`;
    return JSON.stringify(value);
  }
  return String(value);
}

/** Fields of a reply that are bookkeeping, not content. */
const BOOKKEEPING = new Set(["ok", "duplicate", "sequence", "asOf", "commandId"]);

/**
 * A reply with no renderer of its own: each scalar field as `name: value`; an array of objects as
 * a table of its keys; an object of objects as a table keyed by `name`.
 */
export function renderGeneric(reply: Row, view: View = {}): string[] {
  const indented = view.width === undefined ? undefined : view.width - 2;
  const lines: string[] = [];
  for (const [key, value] of Object.entries(reply)) {
    if (BOOKKEEPING.has(key)) continue;
    if (Array.isArray(value) && value.every((v) => v !== null && typeof v === "object" && !Array.isArray(v))) {
      const rows = value as Row[];
      const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))];
      lines.push(`${key}:`, ...table(rows, columns, indented).map((l) => `  ${l}`));
    } else if (value !== null && typeof value === "object" && !Array.isArray(value)) {
      const entries = Object.entries(value as Row);
      if (entries.length > 0 && entries.every(([, v]) => v !== null && typeof v === "object" && !Array.isArray(v))) {
        const rows = entries.map(([name, v]) => ({ name, ...(v as Row) }));
        const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))];
        lines.push(`${key}:`, ...table(rows, columns, indented).map((l) => `  ${l}`));
      } else {
        lines.push(`${key}: ${entries.length === 0 ? "(none)" : entries.map(([k, v]) => `${k}=${cell(v)}`).join(" ")}`);
      }
    } else {
      lines.push(`${key}: ${cell(value)}`);
    }
  }
  return lines.length === 0 ? ["ok"] : lines;
}

/**
 * The lines an accepted command's reply adds after its own: a duplicate (retried) command or an
 * unchanged one (the records already said it) appended nothing; a registration that replaced an
 * earlier version names it.
 */
export function duplicateNote(reply: Row): string[] {
  if (reply.duplicate === true) return [`(already applied as command ${String(reply.commandId)}: nothing new was written)`];
  if (reply.unchanged === true) return ["(unchanged: the records already say this; nothing new was written)"];
  if (typeof reply.replaced === "string") return [`(replaced version ${reply.replaced})`];
  return [];
}

/** `mesh where`: each placed node, its overlay name, and whether it is the hub or the broker's node. */
export function renderWhere(reply: Row, view: View = {}): string[] {
  const placed = (Array.isArray(reply.placed) ? reply.placed : []) as Row[];
  const rows = placed.map((p) => ({
    node: p.node,
    overlay: p.overlayName,
    role: [p.hub === true ? "hub" : "", p.broker === true ? "broker" : ""].filter(Boolean).join(","),
  }));
  const lines = rows.length === 0 ? ["no node is on the overlay yet: mesh overlay place <node> --hub"] : table(rows, ["node", "overlay", "role"], view.width);
  if (typeof reply.broker === "string" && !placed.some((p) => p.node === reply.broker)) lines.push(`broker: ${reply.broker} (not on the overlay)`);
  return lines;
}

/**
 * `mesh history`: one line per event, its summary naming the other party (the module and the node
 * of an assignment); a last line says when older events were left out (`--limit`).
 */
export function renderHistory(reply: Row, view: View = {}): string[] {
  const events = (reply.events ?? []) as Row[];
  const entity = reply.entity as Row | undefined;
  if (events.length === 0) return [`no records about ${entity ? `${String(entity.kind)} ${String(entity.id)}` : "that entity"}`];
  const lines = table(events, ["sequence", "at", "actor", "type", "summary"], view.width);
  if (reply.truncated === true) {
    // Left out by --limit (more can be asked for) or by the reply's size (only the records hold more).
    const more = events.length < HISTORY_LIMIT ? `pass a larger --limit (up to ${HISTORY_LIMIT}) for more, or` : "older ones:";
    lines.push(`(the newest ${events.length} of ${String(reply.total)} events: ${more} read the records for all)`);
  }
  return lines;
}

/** A table of one array field of the reply (nodes, modules, seats, credentials). */
export function renderList(field: string, columns: readonly string[]): (reply: Row, view?: View) => string[] {
  return (reply, view = {}) => {
    const value = reply[field];
    const rows = Array.isArray(value) ? (value as Row[]) : value && typeof value === "object" ? Object.values(value as Record<string, Row>) : [];
    return table(rows, columns, view.width);
  };
}

/**
 * How a refusal reads after `refused (<code>)`: ` at <field>: <message>`, the field as the person
 * typed it (`spelled`: `publicKey` → `--key`, in the message too), or `: <message>` without a
 * field. A message that already names its field (a schema refusal: `"manifest.name": ...`, R23)
 * is not preceded by it again: the field is named once.
 */
export function refusalText(error: { field?: string; message: string }, spelled: Readonly<Record<string, string>> = {}): string {
  const { field } = error;
  if (field === undefined) return `: ${error.message}`;
  const typed = spelled[field];
  const named = typed ?? `"${field}"`;
  const message = typed === undefined ? error.message : error.message.split(`"${field}"`).join(typed);
  return message.includes(named) ? `: ${message}` : ` at ${named}: ${message}`;
}

/** R59: one line per list a reply cut to fit the bus's max payload (fitReply's `omitted`): how many, and where to read them. */
export function omittedLines(reply: Readonly<Record<string, unknown>>): string[] {
  const omitted = (reply.omitted ?? {}) as Record<string, Omitted>;
  return Object.entries(omitted).map(([field, o]) => `${o.count} more ${field} not shown: the reply must fit the bus's max payload (R59); see ${o.see}`);
}


/**
 * `text` safe to print on a terminal: every control character but tab and newline (C0, DEL, C1:
 * escape sequences that move the cursor, clear the screen, set the title or write the clipboard)
 * shown as `\xHH`. For output a principal wrote, such as a module's log (`mesh logs`).
 */
export function printable(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
}
