import type { NatsConnection } from "@nats-io/transport-node";
import { Kvm, type KV } from "@nats-io/kv";
import { Objm, setSha256Backend, StorageType, type ObjectStore } from "@nats-io/obj";
import { SNAPSHOT_BUCKET, SNAPSHOT_OBJECTS, SNAPSHOT_POINTER_KEY, snapshotObject } from "../names.ts";
import { initialState, type State } from "../projections/index.ts";

/**
 * The version of the state's shape a snapshot carries (R46). Raise it whenever State (a slice, a
 * record's fields) changes shape: a snapshot written by another shape is then ignored and the
 * state folded from sequence 1, instead of loading data the code would misread.
 */
export const STATE_SHAPE_VERSION = 7;

/** A snapshot's body: the shape version and the folded state. */
type SnapshotBody = { version: number; state: State };

// Snapshots are tens of MiB at a large mesh: node's own SHA-256 digests them ~10x faster.
setSha256Backend("native");

/** Largest chunk the object store writes: under the bus's 1 MiB message limit, with room for headers. */
const CHUNK_BYTES = 900 * 1024;

/** The KV pointer to the newest snapshot: its records sequence, its object's name and size. */
export type SnapshotPointer = { sequence: number; object: string; bytes: number };

/** Where snapshots live: the pointer in a KV bucket, the body (chunked) in an object store. */
export type SnapshotStores = { pointers: KV; objects: ObjectStore };

/** Creates (or opens) the snapshot KV bucket and object store, file storage, `replicas` copies. */
export async function openSnapshotStores(nc: NatsConnection, replicas = 1): Promise<SnapshotStores> {
  const pointers = await new Kvm(nc).create(SNAPSHOT_BUCKET, { history: 1, replicas, storage: StorageType.File });
  const objects = await new Objm(nc).create(SNAPSHOT_OBJECTS, { replicas, storage: StorageType.File });
  return { pointers, objects };
}

/**
 * Saves `state` (plain JSON, with its `sequence`) as the newest snapshot: the body first, in the
 * object store (chunked: a large mesh's state is far over 1 MiB), then the pointer; the snapshot
 * it replaces is deleted last, so a crash in between leaves a usable one. Returns its size in bytes.
 */
export async function saveSnapshot(stores: SnapshotStores, state: State): Promise<{ sequence: number; bytes: number }> {
  const body = new TextEncoder().encode(JSON.stringify({ version: STATE_SHAPE_VERSION, state } satisfies SnapshotBody));
  const object = snapshotObject(state.sequence);
  await stores.objects.putBlob({ name: object, options: { max_chunk_size: CHUNK_BYTES } }, body);
  const before = await readPointer(stores);
  const pointer: SnapshotPointer = { sequence: state.sequence, object, bytes: body.length };
  await stores.pointers.put(SNAPSHOT_POINTER_KEY, JSON.stringify(pointer));
  if (before && before.object !== object) await stores.objects.delete(before.object).catch(() => undefined);
  return { sequence: state.sequence, bytes: body.length };
}

/** What loadSnapshot found: a usable state, nothing, or a snapshot it ignored and why (one line). */
export type LoadedSnapshot = { state: State } | { state: null; ignored?: string; ahead?: number };

/**
 * Loads the newest snapshot. `state` is null when there is none or it cannot be used, and then
 * `ignored` says why in one line when there was one (R46): its body is missing or does not parse,
 * its shape version is not STATE_SHAPE_VERSION, a slice of the state is missing, its sequence
 * disagrees with its pointer, or it is ahead of the records (`lastSequence`, the stream's last
 * sequence: a stream restored from an older backup). The caller folds from sequence 1. The
 * returned state is plain (not frozen) JSON data.
 */
export async function loadSnapshot(stores: SnapshotStores, lastSequence: number): Promise<LoadedSnapshot> {
  const pointer = await readPointer(stores).catch(() => null);
  if (!pointer) return { state: null };
  const at = `the snapshot at sequence ${pointer.sequence}`;
  if (pointer.sequence > lastSequence) {
    return { state: null, ahead: pointer.sequence, ignored: `${at} is ahead of the records (last sequence ${lastSequence}): ignored, folding from sequence 1` };
  }
  const bytes = await stores.objects.getBlob(pointer.object);
  if (!bytes) return { state: null, ignored: `${at} has no body: ignored, folding from sequence 1` };
  let body: Partial<SnapshotBody>;
  try {
    body = JSON.parse(new TextDecoder().decode(bytes)) as Partial<SnapshotBody>;
  } catch {
    return { state: null, ignored: `${at} does not parse: ignored, folding from sequence 1 (R46)` };
  }
  if (body === null || typeof body !== "object" || body.version !== STATE_SHAPE_VERSION) {
    const version = body !== null && typeof body === "object" && body.version !== undefined ? `shape version ${String(body.version)}` : "no shape version";
    return { state: null, ignored: `${at} has ${version}, this release reads ${STATE_SHAPE_VERSION}: ignored, folding from sequence 1 (R46)` };
  }
  const state = body.state;
  const missing = state === null || typeof state !== "object" ? ["(state)"] : Object.keys(initialState).filter((slice) => !(slice in state));
  if (missing.length > 0) return { state: null, ignored: `${at} lacks ${missing.join(", ")}: ignored, folding from sequence 1 (R46)` };
  if (state!.sequence !== pointer.sequence) return { state: null, ignored: `${at} holds sequence ${state!.sequence}: ignored, folding from sequence 1` };
  return { state: state! };
}

async function readPointer(stores: SnapshotStores): Promise<SnapshotPointer | null> {
  const entry = await stores.pointers.get(SNAPSHOT_POINTER_KEY);
  if (!entry || entry.operation !== "PUT" || entry.length === 0) return null;
  return entry.json<SnapshotPointer>();
}
