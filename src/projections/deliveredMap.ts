import { isDraft, original } from "immer";
import { ShardedMap } from "./shardedMap.ts";
import { sortedHas, withInserted, without } from "./sorted.ts";

/** `value` as plain data: its original when it is an immer draft (values are replaced, never changed in place). */
function plain<T>(value: T): T {
  return isDraft(value) ? (original(value as object) as T) : value;
}

/**
 * The records of a slice whose secrets a node's disk may hold (credentials, provisions: R48), by
 * key, with an index kept by `set` and `delete`: for each node, the sorted keys of the records
 * whose `deliveredTo` names it. A node's removal reads its entry instead of scanning every record
 * (at 10,000 nodes the scan of the credentials made a removal's commit cost 30 ms). The index is
 * derived from the records alone, so a snapshot does not carry it: unpacking sets each record,
 * which builds it again.
 */
export class DeliveredMap<V extends { readonly deliveredTo?: readonly string[] }> extends ShardedMap<V> {
  /** Node → sorted keys of the records delivered to it (see the class comment). */
  readonly delivered = new ShardedMap<string[]>();

  constructor(entries?: Iterable<readonly [string, V]>) {
    super();
    if (entries !== undefined) for (const [key, record] of entries) this.set(key, record);
  }

  override set(key: string, record: V): this {
    const before = plain(this.get(key))?.deliveredTo;
    super.set(key, record);
    reindex(this.delivered, key, before, record.deliveredTo);
    return this;
  }

  override delete(key: string): boolean {
    const before = plain(this.get(key))?.deliveredTo;
    const had = super.delete(key);
    reindex(this.delivered, key, before, undefined);
    return had;
  }

  /** The sorted keys of the records whose `deliveredTo` names `node` (a copy). */
  deliveredAt(node: string): string[] {
    return [...(plain(this.delivered.get(node)) ?? [])];
  }
}

/** Moves `key` in the index from the nodes of `before` to those of `after` (two sorted lists). */
function reindex(index: ShardedMap<string[]>, key: string, before: readonly string[] | undefined, after: readonly string[] | undefined): void {
  for (const node of before ?? []) {
    if (after !== undefined && sortedHas(after, node)) continue;
    const left = without(plain(index.get(node)) ?? [], key);
    if (left === undefined) continue;
    if (left.length === 0) index.delete(node);
    else index.set(node, left);
  }
  for (const node of after ?? []) {
    if (before !== undefined && sortedHas(before, node)) continue;
    const grown = withInserted(plain(index.get(node)), key);
    if (grown !== undefined) index.set(node, grown);
  }
}

/**
 * A node's removal in a DeliveredMap's handler (`records`: its draft, or the plain map of a fresh
 * fold): takes `node` out of the `deliveredTo` of every record the index names for it. immer's
 * Draft type sees any Map as a plain Map, so the draft comes in as one; it is a DeliveredMap all the same.
 */
export function forgetDeliveries<V extends { readonly deliveredTo?: readonly string[] }>(records: Map<string, unknown>, node: string): void {
  const map = records as unknown as DeliveredMap<V>;
  for (const key of map.deliveredAt(node)) {
    const record = plain(map.get(key))!;
    const left = without(record.deliveredTo!, node)!;
    const { deliveredTo: _gone, ...rest } = record;
    map.set(key, (left.length === 0 ? rest : { ...rest, deliveredTo: left }) as V);
  }
}
