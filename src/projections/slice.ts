import type { Draft } from "immer";
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

/** The sorted lists' helpers (sorted.ts), for the slices' handlers. */
export { insertSorted, removeSorted, sortedHas, sortedIndex } from "./sorted.ts";
