import { promisify } from "node:util";
import { gunzip, gzip } from "node:zlib";
import { errors, type NatsConnection } from "@nats-io/transport-node";
import { Kvm, type KV } from "@nats-io/kv";
import { Objm, setSha256Backend, StorageType, type ObjectStore } from "@nats-io/obj";
import { SNAPSHOT_BUCKET, SNAPSHOT_OBJECTS, SNAPSHOT_POINTER_KEY, snapshotObject } from "../names.ts";
import { initialState, type State } from "../projections/index.ts";
import { packState, unpackState, type PackedState } from "../projections/pack.ts";
import { SnapshotReadStopped } from "./errors.ts";

/**
 * The version of the state's shape a snapshot carries (R46). Raise it whenever State (a slice, a
 * record's fields) or the way a snapshot writes it changes shape: a snapshot written by another
 * shape is then ignored and the state folded from sequence 1, instead of loading data the code
 * would misread. 8: bucketed maps packed (PackedBuckets), the body gzipped. 9: the retired keys
 * (`retired`, R66). 10: a rotated module credential's `previous` key (R73). 11: the modules retired
 * (`modules.retired`, `mesh module retire`). 12: the slices are Maps in memory (immer folds),
 * packed as keys and values in the fold's order (projections/pack.ts); only `applied` is still a
 * packed bucketed map. A shape 11 snapshot is not read: its maps are in hash order, not the fold's,
 * so a state loaded from it would pack to other bytes than a replay (R41); the start folds from 1.
 */
export const STATE_SHAPE_VERSION = 12;

/** A snapshot's body, before gzip: the shape version and the folded state, packed. */
type SnapshotBody = { version: number; state: PackedState };

const gzipped = promisify(gzip);
const gunzipped = promisify(gunzip);

// Snapshots are tens of MiB at a large mesh: node's own SHA-256 digests them ~10x faster.
setSha256Backend("native");

/** Largest chunk the object store writes: under the bus's 1 MiB message limit, with room for headers. */
const CHUNK_BYTES = 900 * 1024;

/** The KV pointer to the newest snapshot: its records sequence, its object's name and size. */
export type SnapshotPointer = { sequence: number; object: string; bytes: number };

/**
 * Where snapshots live: the pointer in a KV bucket, the body (chunked) in an object store; `nc`,
 * their connection, whose close ends a body's read.
 */
export type SnapshotStores = { pointers: KV; objects: ObjectStore; nc: NatsConnection };

/** Creates (or opens) the snapshot KV bucket and object store, file storage, `replicas` copies. */
export async function openSnapshotStores(nc: NatsConnection, replicas = 1): Promise<SnapshotStores> {
  const pointers = await new Kvm(nc).create(SNAPSHOT_BUCKET, { history: 1, replicas, storage: StorageType.File });
  const objects = await new Objm(nc).create(SNAPSHOT_OBJECTS, { replicas, storage: StorageType.File });
  return { pointers, objects, nc };
}

/**
 * Saves `state` (plain JSON, with its `sequence`) as the newest snapshot (encodeSnapshot): the body first, in the
 * object store (chunked: a large mesh's state is far over 1 MiB), then the pointer; the snapshot
 * it replaces is deleted last, so a crash in between leaves a usable one. Returns its size in bytes.
 */
export async function saveSnapshot(stores: SnapshotStores, state: State): Promise<{ sequence: number; bytes: number }> {
  const body = await encodeSnapshot(state);
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
 * `ignored` says why in one line when there was one (R46): its body is missing or cannot be read
 * (decodeSnapshot: it does not parse, its shape version is not STATE_SHAPE_VERSION, a slice of the
 * state is missing), its sequence disagrees with its pointer, or it is ahead of the records
 * (`lastSequence`, the stream's last sequence: a stream restored from an older backup). The
 * object store checks the body's SHA-256 digest as it reads it. The caller folds from sequence 1.
 * The returned state is plain (not frozen) JSON data. Throws SnapshotReadStopped when the body's
 * read receives nothing for `stallMs` (default SNAPSHOT_STALL_MS) or the connection closes.
 */
export async function loadSnapshot(stores: SnapshotStores, lastSequence: number, { stallMs = SNAPSHOT_STALL_MS } = {}): Promise<LoadedSnapshot> {
  const pointer = await readPointer(stores).catch(() => null);
  if (!pointer) return { state: null };
  const at = `the snapshot at sequence ${pointer.sequence}`;
  if (pointer.sequence > lastSequence) {
    return { state: null, ahead: pointer.sequence, ignored: `${at} is ahead of the records (last sequence ${lastSequence}): ignored, folding from sequence 1` };
  }
  const bytes = await readBody(stores, pointer.object, stallMs);
  if (!bytes) return { state: null, ignored: `${at} has no body: ignored, folding from sequence 1` };
  const read = await decodeSnapshot(bytes);
  if (read.state === null) return { state: null, ignored: `${at} ${read.ignored}: ignored, folding from sequence 1 (R46)` };
  if (read.state.sequence !== pointer.sequence) return { state: null, ignored: `${at} holds sequence ${read.state.sequence}: ignored, folding from sequence 1` };
  return { state: read.state };
}

/** Default of loadSnapshot's `stallMs`: how long a body's read may receive nothing, ms. */
export const SNAPSHOT_STALL_MS = 10_000;

/**
 * The body of the object `name` as one array, or null when there is none. Throws
 * SnapshotReadStopped when no chunk arrived for `stallMs`, or the connection closed: @nats-io/obj's
 * getBlob never settles then (its consumer's iterator ends without ending the body's stream), and a
 * controller's start waiting on it hung for good, its stop too (R61).
 */
async function readBody(stores: SnapshotStores, name: string, stallMs: number): Promise<Uint8Array | null> {
  const object = await stores.objects.get(name);
  if (object === null) return null;
  // The digest check's verdict: settled when the body ended (a rejection read below, never unhandled).
  const verdict = object.error.then(() => undefined, (error: unknown) => (error instanceof Error ? error : new Error(String(error))));
  const reader = object.data.getReader();
  const closed = stores.nc.closed().then(() => new SnapshotReadStopped(name, "the connection to the bus closed", { cause: new errors.ClosedConnectionError() }));
  const chunks: Uint8Array[] = [];
  for (;;) {
    let timer: NodeJS.Timeout | undefined;
    const stalled = new Promise<SnapshotReadStopped>((resolve) => {
      timer = setTimeout(() => resolve(new SnapshotReadStopped(name, `nothing arrived for ${stallMs} ms`, { cause: new errors.TimeoutError() })), stallMs);
    });
    const next = await Promise.race([reader.read(), stalled, closed]).finally(() => clearTimeout(timer));
    if (next instanceof SnapshotReadStopped) {
      await reader.cancel().catch(() => undefined); // stops the library's consumer
      throw next;
    }
    if (next.done) break;
    chunks.push(next.value);
  }
  const failed = await verdict;
  if (failed !== undefined) throw failed;
  return Buffer.concat(chunks);
}

/**
 * A snapshot's body: `{ version, state }` as JSON, the state packed apart from its shape in
 * memory (projections/pack.ts: at a million commits the command ids were most of the snapshot and of a
 * start's time), gzipped at level 1 (a third of the bytes to get from the object store, for a
 * fraction of the time those bytes took; a higher level saves little more and costs the save). Pure.
 */
export async function encodeSnapshot(state: State): Promise<Uint8Array> {
  const body: SnapshotBody = { version: STATE_SHAPE_VERSION, state: packState(state) };
  // ASCII only (JSON escapes for the rest), so a start reads it as latin1, a plain copy: decoding
  // the 20 MiB of a million commits as UTF-8 took 60 to 100 ms, latin1 a few. Most states are
  // ASCII already, and counting their UTF-8 bytes says so faster than a scan for the rest.
  let json = JSON.stringify(body);
  if (Buffer.byteLength(json, "utf8") !== json.length) json = json.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
  return gzipped(Buffer.from(json, "latin1"), { level: 1 });
}

/**
 * The state a snapshot's body holds (encodeSnapshot), plain (not frozen) JSON data; or null and why
 * in a few words for one log line (R46): it does not parse (gzip, JSON, a packed map: a body
 * written by a release before gzip is read as plain JSON, to name its version), its shape version
 * is not STATE_SHAPE_VERSION, or a slice of the state is missing. The JSON is read as latin1:
 * encodeSnapshot writes ASCII only. Pure.
 */
export async function decodeSnapshot(bytes: Uint8Array): Promise<{ state: State } | { state: null; ignored: string }> {
  let body: Partial<SnapshotBody>;
  try {
    const text = bytes[0] === 0x1f && bytes[1] === 0x8b ? await gunzipped(bytes, { chunkSize: gunzippedSize(bytes) }) : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    body = JSON.parse(text.toString("latin1")) as Partial<SnapshotBody>;
  } catch {
    return { state: null, ignored: "does not parse" };
  }
  if (body === null || typeof body !== "object" || body.version !== STATE_SHAPE_VERSION) {
    const version = body !== null && typeof body === "object" && body.version !== undefined ? `shape version ${String(body.version)}` : "no shape version";
    return { state: null, ignored: `has ${version}, this release reads ${STATE_SHAPE_VERSION}` };
  }
  const packed = body.state;
  const missing = packed === null || typeof packed !== "object" ? ["(state)"] : Object.keys(initialState).filter((slice) => !(slice in packed));
  if (missing.length > 0) return { state: null, ignored: `lacks ${missing.join(", ")}` };
  try {
    return { state: unpackState(packed!) };
  } catch (error) {
    return { state: null, ignored: `does not parse (${(error as Error).message})` };
  }
}

/**
 * The size of a gzipped body once gunzipped, from its trailer (the size modulo 2^32), to inflate
 * it as one output chunk: in zlib's default chunks of 16 KiB, concatenating them showed in a
 * start's profile. Kept within 64 KiB .. 1 GiB whatever the trailer says.
 */
function gunzippedSize(bytes: Uint8Array): number {
  const size = bytes.length < 4 ? 0 : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).readUInt32LE(bytes.byteLength - 4);
  return Math.min(Math.max(size + 1, 64 * 1024), 2 ** 30);
}

async function readPointer(stores: SnapshotStores): Promise<SnapshotPointer | null> {
  const entry = await stores.pointers.get(SNAPSHOT_POINTER_KEY);
  if (!entry || entry.operation !== "PUT" || entry.length === 0) return null;
  return entry.json<SnapshotPointer>();
}
