import type { State } from "./state.ts";
import { ShardedMap } from "./shardedMap.ts";
import { DeliveredMap } from "./deliveredMap.ts";
import { nodeIndex } from "./assignments.ts";
import { packBuckets, unpackBuckets, type PackedBuckets } from "./buckets.ts";

/**
 * The state as a snapshot holds it, apart from its shape in memory (R46 names the packed shape's
 * version: records/snapshots.ts): every Map written as its keys and its values in two arrays, in
 * the Map's own order (the order the fold set them in), so a state unpacks to the same Maps in the
 * same order and packs again to the same bytes (R41: a snapshot plus its tail folds exactly as a
 * replay does); `applied` as its bucketed map packed (buckets.ts PackedBuckets). Plain JSON data.
 */
export type PackedMap<V> = { keys: string[]; values: V[] };

type PackedOf<T> = T extends ReadonlyMap<string, infer V> ? PackedMap<V>
  : T extends null ? null
  : T extends Record<string, unknown> ? { [K in keyof T]: T[K] extends ReadonlyMap<string, infer V> ? PackedMap<V> : T[K] } : T;

/** The state packed (see PackedMap); the assignments' `byNode` is derived, so it is not packed. */
export type PackedState = { [K in Exclude<keyof State, "applied" | "assignments">]: PackedOf<State[K]> } & {
  applied: PackedBuckets<number>;
  assignments: PackedOf<Omit<State["assignments"], "byNode">>;
};

function packMap<V>(map: ReadonlyMap<string, V>): PackedMap<V> {
  const keys = new Array<string>(map.size);
  const values = new Array<V>(map.size);
  let at = 0;
  for (const [key, value] of map) {
    keys[at] = key;
    values[at] = value;
    at += 1;
  }
  return { keys, values };
}

function unpackMap<V>(packed: PackedMap<V>, map: Map<string, V> | ShardedMap<V> = new Map<string, V>()): ReadonlyMap<string, V> {
  if (packed === null || typeof packed !== "object" || !Array.isArray(packed.keys) || !Array.isArray(packed.values) || packed.keys.length !== packed.values.length) {
    throw new Error("cannot unpack a map: its keys or values are missing or their counts differ");
  }
  for (let i = 0; i < packed.keys.length; i += 1) map.set(packed.keys[i]!, packed.values[i]!);
  return map;
}

/** `state` packed for a snapshot (see PackedMap). Pure: `state` is left as it was. */
export function packState(state: State): PackedState {
  const { modules, assignments, overlay } = state;
  return {
    sequence: state.sequence,
    applied: packBuckets(state.applied),
    mesh: state.mesh,
    nodes: packMap(state.nodes),
    modules: { modules: packMap(modules.modules), seats: packMap(modules.seats), aliases: packMap(modules.aliases), retired: packMap(modules.retired) },
    credentials: packMap(state.credentials),
    assignments: { byModule: packMap(assignments.byModule), handovers: packMap(assignments.handovers) },
    overlay: { hub: overlay.hub, placed: packMap(overlay.placed) },
    provisions: packMap(state.provisions),
    sent: packMap(state.sent),
    retired: packMap(state.retired),
  };
}

/** The state packState packed: plain (not frozen) Maps and objects. Throws an Error ("cannot unpack ...") when a part is missing or damaged. */
export function unpackState(packed: PackedState): State {
  const { modules, assignments, overlay } = packed;
  if (modules == null || assignments == null || overlay == null || typeof packed.sequence !== "number") throw new Error("cannot unpack the state: a slice is missing");
  const byModule = unpackMap(assignments.byModule, new ShardedMap());
  return {
    sequence: packed.sequence,
    applied: unpackBuckets(packed.applied),
    mesh: packed.mesh,
    nodes: unpackMap(packed.nodes, new ShardedMap()),
    modules: { modules: unpackMap(modules.modules), seats: unpackMap(modules.seats), aliases: unpackMap(modules.aliases), retired: unpackMap(modules.retired) },
    credentials: unpackMap(packed.credentials, new DeliveredMap()) as State["credentials"],
    assignments: { byModule, byNode: nodeIndex(byModule), handovers: unpackMap(assignments.handovers) },
    overlay: { hub: overlay.hub, placed: unpackMap(overlay.placed, new ShardedMap()) },
    provisions: unpackMap(packed.provisions, new DeliveredMap()) as State["provisions"],
    sent: unpackMap(packed.sent, new ShardedMap()),
    retired: unpackMap(packed.retired, new ShardedMap()),
  };
}
