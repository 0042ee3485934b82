import { current, isDraft, original, type Draft } from "immer";
import type { MeshEvent, MeshEventType } from "../events/index.ts";
import type { Slices } from "./fold.ts";

/** The event of type `T`. */
export type EventOf<T extends MeshEventType> = Extract<MeshEvent, { type: T }>;

/**
 * What a handler may read besides its own slice and the event: the records sequence of the
 * commit the event is in, and the other slices as the fold has made them so far (read-only: the
 * slices before this one in SLICE_ORDER have folded the event, the rest not yet; fold.ts).
 */
export type FoldContext = { readonly sequence: number; readonly slices: Readonly<Slices> };

/**
 * A handler of one event type: changes `draft` (an immer draft of the slice, or a private plain
 * copy on a fresh fold: the same code either way) in place, or returns the slice's new value
 * (a slice that is a primitive or null cannot be changed in place: `mesh`).
 */
export type Handler<S, T extends MeshEventType> = (draft: Draft<S>, event: EventOf<T>, ctx: FoldContext) => S | void;

/** A slice's fold: its handlers by event type (an event it does not name leaves it as it was). */
export type SliceFold<S> = { readonly [T in MeshEventType]?: Handler<S, T> };

/**
 * The value of `key` in a slice's Map (a draft or plain) as plain data. Handlers never change a
 * Map's value in place: they set a new one (a draft of a list changed in place costs a proxy trap
 * per element moved). So a value drafted by a read is unchanged, and its original is its value.
 */
export function peek<V>(map: Map<string, Draft<V>>, key: string): V | undefined {
  const value: unknown = map.get(key);
  return (isDraft(value) ? original(value) : value) as V | undefined;
}

/**
 * Calls `visit` with each entry of a slice's Map (a draft or plain) as plain data, for a scan that
 * changes few of them; `visit` may set the key it is given. A draft is read through immer's
 * `current` (the unchanged parts are the originals): walking a draft itself makes a proxy of every
 * value, which a removal's scan of 10,000 credentials paid on every commit.
 */
export function forEachPlain<V>(map: Map<string, Draft<V>>, visit: (key: string, value: V) => void): void {
  const plain = (isDraft(map) ? current(map as object) : map) as unknown as ReadonlyMap<string, V>;
  plain.forEach((value, key) => visit(key, value));
}

/** The sorted lists' helpers (sorted.ts), for the slices' handlers. */
export { withInserted, without, sortedHas, sortedIndex } from "./sorted.ts";
