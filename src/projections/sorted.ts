/**
 * Sorted lists of names in the folded state (a module's nodes, a credential's or a provision's
 * `deliveredTo`), kept sorted by insertion at their place, never re-sorted: a list of a module on
 * 10,000 nodes must not be scanned and sorted again for each node it gains (a fold of 10,000
 * unassignments of one module took 1.3 s re-sorting its credential's `deliveredTo`).
 * The order is Array.prototype.sort's (UTF-16 code units), so a list sorted by either is the same.
 */

/** Where `item` is or would go in the sorted `list`: a binary search. */
export function sortedIndex(list: readonly string[], item: string): number {
  let low = 0;
  let high = list.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (list[middle]! < item) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** Whether the sorted `list` holds `item`: a binary search. */
export function sortedHas(list: readonly string[], item: string): boolean {
  return list[sortedIndex(list, item)] === item;
}

/** A new sorted list: `list` (none: empty) with `item` at its place; undefined when `list` holds it already. */
export function withInserted(list: readonly string[] | undefined, item: string): string[] | undefined {
  const from = list ?? [];
  const at = sortedIndex(from, item);
  if (from[at] === item) return undefined;
  const next = from.slice();
  next.splice(at, 0, item);
  return next;
}

/** A new sorted list: `list` without `item`; undefined when `list` does not hold it. */
export function without(list: readonly string[], item: string): string[] | undefined {
  const at = sortedIndex(list, item);
  if (list[at] !== item) return undefined;
  const next = list.slice();
  next.splice(at, 1);
  return next;
}
