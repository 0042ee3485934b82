import type { NatsConnection } from "@nats-io/transport-node";
import { Kvm, type KV } from "@nats-io/kv";
import { Objm, setSha256Backend, StorageType, type ObjectStore } from "@nats-io/obj";
import { SNAPSHOT_BUCKET, SNAPSHOT_OBJECTS, SNAPSHOT_POINTER_KEY, snapshotObject } from "../names.ts";
import type { State } from "../projections/index.ts";

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
  const body = new TextEncoder().encode(JSON.stringify(state));
  const object = snapshotObject(state.sequence);
  await stores.objects.putBlob({ name: object, options: { max_chunk_size: CHUNK_BYTES } }, body);
  const before = await readPointer(stores);
  const pointer: SnapshotPointer = { sequence: state.sequence, object, bytes: body.length };
  await stores.pointers.put(SNAPSHOT_POINTER_KEY, JSON.stringify(pointer));
  if (before && before.object !== object) await stores.objects.delete(before.object).catch(() => undefined);
  return { sequence: state.sequence, bytes: body.length };
}

/**
 * Loads the newest snapshot, or null when there is none or it cannot be used: its body is missing,
 * its sequence disagrees with its pointer, or it is ahead of the records (`lastSequence`, the
 * stream's last sequence: a stream restored from an older backup), in which case the caller folds
 * from sequence 1. The returned state is plain (not frozen) JSON data.
 */
export async function loadSnapshot(stores: SnapshotStores, lastSequence: number): Promise<State | null> {
  const pointer = await readPointer(stores);
  if (!pointer || pointer.sequence > lastSequence) return null;
  const body = await stores.objects.getBlob(pointer.object);
  if (!body) return null;
  const state = JSON.parse(new TextDecoder().decode(body)) as State;
  if (state.sequence !== pointer.sequence) return null;
  return state;
}

async function readPointer(stores: SnapshotStores): Promise<SnapshotPointer | null> {
  const entry = await stores.pointers.get(SNAPSHOT_POINTER_KEY);
  if (!entry || entry.operation !== "PUT" || entry.length === 0) return null;
  return entry.json<SnapshotPointer>();
}
