/**
 * Replies that fit (R59) for verbs that are not lists but carry one that grows with the mesh (the
 * push report's node lines, `assign`'s nodes, `overlay.place`'s stale credentials): such a reply
 * is sent whole while it fits the bus's max payload; past it, its growing lists are cut from the
 * end (the items that need attention kept first), and `omitted` says per list how many items were
 * left out and where to read them all. Pure: the shell calls it with the reply and the byte budget.
 */

/** One list of a reply that grows with the mesh, and how to cut it. */
export type BoundedList = {
  /** The reply's field holding the list (an array). */
  field: string;
  /** Where the whole list is read when it is cut: a CLI command, said to the operator. */
  see: string;
  /** Items kept ahead of the others when the list is cut (nodes needing attention); order kept otherwise. */
  first?(item: unknown): boolean;
};

/** What a cut list left out: how many items, and where to read them. */
export type Omitted = { count: number; see: string };

/** Bytes kept free for what the shell adds around a reply: ok, commandId (128 at most), duplicate, sequence, asOf. */
export const REPLY_ENVELOPE_BYTES = 512;

/** Byte length of `value` as JSON, the way the reply is sent. */
function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value), "utf8");
}

/**
 * `reply` as sent within `budgetBytes` (the connection's max payload, R59): unchanged when it fits
 * with REPLY_ENVELOPE_BYTES to spare; else its `lists` are cut, in the order given (the most
 * expendable first), each only as far as needed: items `first` accepts move ahead (stable), items
 * are dropped from the end, and `omitted[field]` = {count, see} names each cut list. A list may be
 * cut to nothing. Fields that are not arrays are left alone. Never throws; a reply whose other
 * fields alone pass the budget comes back with its lists emptied (the send then fails as before).
 */
export function fitReply(reply: Record<string, unknown>, lists: readonly BoundedList[], budgetBytes: number): Record<string, unknown> {
  const budget = budgetBytes - REPLY_ENVELOPE_BYTES;
  let total = jsonBytes(reply);
  if (total <= budget) return reply;
  const out: Record<string, unknown> = { ...reply };
  const omitted: Record<string, Omitted> = {};
  for (const list of lists) {
    if (total <= budget) break;
    const whole = out[list.field];
    if (!Array.isArray(whole) || whole.length === 0) continue;
    const ordered = list.first === undefined ? whole : [...whole.filter((i) => list.first!(i)), ...whole.filter((i) => !list.first!(i))];
    total += jsonBytes({ [list.field]: { count: ordered.length, see: list.see } }) + 12; // its `omitted` entry (and the key "omitted")
    let keep = ordered.length;
    while (keep > 0 && total > budget) {
      keep -= 1;
      total -= jsonBytes(ordered[keep]) + 1; // the item and its comma
    }
    out[list.field] = ordered.slice(0, keep);
    omitted[list.field] = { count: ordered.length - keep, see: list.see };
  }
  out.omitted = omitted;
  return out;
}
