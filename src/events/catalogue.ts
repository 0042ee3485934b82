/**
 * The records adapter (DESIGN.md section 4): commits on the CATALOGUE stream, read back in order,
 * validated, and folded into the state; fenced appends (R40), snapshots (R41), a stream that
 * cannot be purged or have messages deleted (R42).
 */
import { headers, nanos, type NatsConnection } from "@nats-io/transport-node";
import {
  DeliverPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  RetentionPolicy,
  StorageType,
  jetstream,
  jetstreamManager,
  type JetStreamClient,
  type JetStreamManager,
  type StreamConfig,
} from "@nats-io/jetstream";
import { CATALOGUE_STREAM, CATALOGUE_SUBJECTS, catalogueSubject } from "../names.ts";
import { Commit, type Entity, type MeshEvent } from "./index.ts";
import { FencedAppend, FenceRetriesExhausted, InvalidEvent } from "./errors.ts";
import { retryFenced } from "./retry.ts";
import { commandIdReused, type CommandRequest } from "./reuse.ts";
import { loadSnapshot, openSnapshotStores, saveSnapshot, type SnapshotStores } from "./snapshots.ts";
import { appliedSequence, evolve, initialState, startFold, type Fold, type SequencedCommit, type State } from "../projections/index.ts";
import type { Decision, Refusal } from "../commands/envelope.ts";

export { FencedAppend, FenceRetriesExhausted, InvalidEvent };

/** The header naming a commit's event types, comma-joined, so tools can filter without parsing. */
export const EVENT_TYPES_HEADER = "Mesh-Event-Types";
/** How many commits the reader hands over at a time. */
export const FOLD_BATCH = 1000;
/** From how many commits to read a catch-up folds into a copy of the state rather than a draft (startFold). */
const COPY_FOLD_FROM = 5000;

/**
 * What transact answers. Accepted: the commit's sequence, events and entity; `duplicate` when the
 * command id was already applied (nothing appended); `unchanged` when decide said the records
 * already hold it (nothing appended, no events, `sequence` is the last folded one).
 */
export type TransactResult =
  | { ok: true; sequence: number; events: MeshEvent[]; entity: Entity; duplicate: boolean; unchanged: boolean; state: State }
  | { ok: false; refusal: Refusal };

export interface Catalogue {
  /** The folded state; state.sequence is the last folded stream sequence. */
  readonly state: State;
  /** The sequence of the snapshot this catalogue started from; 0 when it folded from sequence 1. */
  readonly startedFrom: number;
  /** Folds every commit after state.sequence up to the stream's end; returns the new state. */
  catchUp(): Promise<State>;
  /**
   * Runs one command against the records. A command id already applied (appliedSequence, so also
   * after the dedupe window) answers `duplicate: true` with the original commit's events and
   * appends nothing. Otherwise `decide(state)`: a refusal is returned as is; events are appended
   * as one commit on `mesh.catalogue.<kind>.<id>`, Nats-Msg-Id = commandId, fenced by
   * state.sequence (R40). An `unchanged` decision appends nothing and answers ok with no events
   * and `unchanged: true` (its command id is not recorded: sending it again decides again). A fenced-out append catches up and decides again (retry.ts), then
   * throws FenceRetriesExhausted. Throws InvalidEvent (sequence 0) for events that fail their
   * schema. Calls on one Catalogue run one at a time.
   *
   * `request` (R53): the verb and argument digest the command id is used for, recorded with the
   * commit; an id already applied to another request is refused `command-id-reused` (commandIdReused)
   * instead of answering the first command's duplicate.
   */
  transact(commandId: string, decide: (state: State) => Decision, request?: CommandRequest): Promise<TransactResult>;
  /** Saves a snapshot of the folded state (object store body, KV pointer). Bytes = body size. */
  snapshot(): Promise<{ sequence: number; bytes: number }>;
}

export type CatalogueOptions = {
  /** Copies of the stream and the snapshot stores: 1 by default, 3 on a cluster. */
  replicas?: number;
  /** Start from the newest snapshot (default true); false folds from sequence 1. */
  useSnapshot?: boolean;
  /** The stream's dedupe window in ms when the stream is created (server default: 2 minutes). */
  duplicateWindowMs?: number;
};

export type ReadOptions = {
  /** Stop after this sequence (default: the stream's last sequence when the read starts). */
  toSequence?: number;
  /** Commits per batch handed to `onBatch` (default FOLD_BATCH). */
  batchSize?: number;
};

type Bus = { nc: NatsConnection; js: JetStreamClient; jsm: JetStreamManager };

async function busOf(nc: NatsConnection): Promise<Bus> {
  return { nc, js: jetstream(nc), jsm: await jetstreamManager(nc, { checkAPI: false }) };
}

/**
 * Creates the CATALOGUE stream or asserts the one there: file storage, limits retention, no age
 * limit, deny_delete and deny_purge (R42). A stream missing a guard is updated to have it.
 */
export async function ensureCatalogueStream(jsm: JetStreamManager, options: CatalogueOptions = {}): Promise<void> {
  const config: Partial<StreamConfig> & { name: string } = {
    name: CATALOGUE_STREAM,
    subjects: [CATALOGUE_SUBJECTS],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    max_age: 0,
    max_msgs: -1,
    max_bytes: -1,
    deny_delete: true,
    deny_purge: true,
    num_replicas: options.replicas ?? 1,
    ...(options.duplicateWindowMs === undefined ? {} : { duplicate_window: nanos(options.duplicateWindowMs) }),
  };
  let existing: StreamConfig;
  try {
    existing = (await jsm.streams.info(CATALOGUE_STREAM)).config;
  } catch (error) {
    if (!(error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound)) throw error;
    await jsm.streams.add(config);
    return;
  }
  if (!existing.deny_delete || !existing.deny_purge || existing.max_age !== 0 || !existing.subjects.includes(CATALOGUE_SUBJECTS)) {
    await jsm.streams.update(CATALOGUE_STREAM, {
      ...existing,
      deny_delete: true,
      deny_purge: true,
      max_age: 0,
      subjects: [...new Set([...existing.subjects, CATALOGUE_SUBJECTS])],
    });
  }
}

/** Parses and validates one stored commit; InvalidEvent naming `sequence` when it is not one. */
function decodeCommit(sequence: number, subject: string, data: Uint8Array): Commit {
  let raw: unknown;
  try {
    raw = JSON.parse(decoder.decode(data));
  } catch (error) {
    throw new InvalidEvent(sequence, { cause: error });
  }
  const parsed = Commit.safeParse(raw);
  if (!parsed.success) throw new InvalidEvent(sequence, { cause: parsed.error });
  const commit = parsed.data;
  if (subject !== catalogueSubject(commit.entity.kind, commit.entity.id)) {
    throw new InvalidEvent(sequence, { cause: new Error(`commit about ${commit.entity.kind}/${commit.entity.id} stored on ${subject}`) });
  }
  return commit;
}
const decoder = new TextDecoder();

async function readFrom(
  bus: Bus,
  fromSequence: number,
  onBatch: (batch: SequencedCommit[]) => void,
  options: ReadOptions = {},
  onCount: (count: number) => void = () => undefined,
): Promise<number> {
  const from = Math.max(1, fromSequence);
  const info = await bus.jsm.streams.info(CATALOGUE_STREAM);
  const last = Math.min(options.toSequence ?? Number.POSITIVE_INFINITY, info.state.last_seq);
  if (from > last) return from - 1;
  onCount(last - from + 1);
  const batchSize = options.batchSize ?? FOLD_BATCH;
  const consumer = await bus.js.consumers.get(CATALOGUE_STREAM, {
    deliver_policy: DeliverPolicy.StartSequence,
    opt_start_seq: from,
  });
  const messages = await consumer.consume({ max_messages: Math.max(batchSize, 1000) });
  let batch: SequencedCommit[] = [];
  let read = from - 1;
  try {
    for await (const m of messages) {
      let commit: Commit;
      try {
        commit = decodeCommit(m.seq, m.subject, m.data);
      } catch (error) {
        if (batch.length > 0) onBatch(batch); // fold what came before the bad message
        throw error;
      }
      batch.push({ sequence: m.seq, commit });
      read = m.seq;
      if (batch.length >= batchSize) {
        onBatch(batch);
        batch = [];
      }
      if (m.seq >= last) break;
    }
    if (batch.length > 0) onBatch(batch);
  } finally {
    await messages.close().catch(() => undefined);
  }
  return read;
}

/**
 * Reads the commits from `fromSequence` to the stream's last sequence (as it was when the read
 * started, or `options.toSequence`), in order, validated, handing them to `onBatch` in batches.
 * Returns the last sequence read (fromSequence - 1 when there was nothing). Throws InvalidEvent
 * naming the sequence of the first message that is not a valid commit, after handing over the
 * valid ones before it.
 */
export async function readCommits(
  nc: NatsConnection,
  fromSequence: number,
  onBatch: (batch: SequencedCommit[]) => void,
  options: ReadOptions = {},
): Promise<number> {
  return readFrom(await busOf(nc), fromSequence, onBatch, options);
}

/** Folds every commit from sequence 1, ignoring snapshots (R41). Throws InvalidEvent as readCommits. */
export async function replay(nc: NatsConnection): Promise<State> {
  return foldFrom(await busOf(nc), initialState);
}

/**
 * Folds the commits after `state.sequence` into it with one fold (startFold: a copy for a long
 * read, a draft for a short tail). When a bad commit stops the read, the commits before it are
 * folded into the state handed to `onFolded`, and InvalidEvent is thrown.
 */
async function foldFrom(bus: Bus, state: State, onFolded: (state: State) => void = () => undefined): Promise<State> {
  let fold: Fold | null = null;
  try {
    await readFrom(bus, state.sequence + 1, (batch) => fold!.add(batch), {}, (count) => {
      // A long read folds into a private copy (no proxies); a short tail into one immer draft.
      fold = startFold(state, state.sequence === 0 || count >= COPY_FOLD_FROM ? "copy" : "draft");
    });
  } finally {
    if (fold !== null) onFolded((fold as Fold).finish());
  }
  return fold === null ? state : (fold as Fold).finish();
}

/** Reads back the commit stored at `sequence` (a duplicate's original), validated. */
async function commitAt(bus: Bus, sequence: number): Promise<Commit> {
  const stored = await bus.jsm.streams.getMessage(CATALOGUE_STREAM, { seq: sequence });
  if (!stored) throw new Error(`the records have no message at sequence ${sequence}`);
  return decodeCommit(stored.seq, stored.subject, stored.data);
}

function isWrongLastSequence(error: unknown): boolean {
  return error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamWrongLastSequence;
}

class JetStreamCatalogue implements Catalogue {
  #bus: Bus;
  #stores: SnapshotStores;
  #state: State;
  #queue: Promise<unknown> = Promise.resolve();
  readonly startedFrom: number;

  constructor(bus: Bus, stores: SnapshotStores, state: State) {
    this.#bus = bus;
    this.#stores = stores;
    this.#state = state;
    this.startedFrom = state.sequence;
  }

  get state(): State {
    return this.#state;
  }

  /** Runs `task` after every earlier call on this catalogue has settled. */
  #serial<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(task, task);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  catchUp(): Promise<State> {
    return this.#serial(() => this.#catchUp());
  }

  async #catchUp(): Promise<State> {
    return foldFrom(this.#bus, this.#state, (state) => { this.#state = state; });
  }

  transact(commandId: string, decide: (state: State) => Decision, request?: CommandRequest): Promise<TransactResult> {
    return this.#serial(() => retryFenced(() => this.#attempt(commandId, decide, request), () => this.#catchUp()));
  }

  async #duplicate(sequence: number, request: CommandRequest | undefined): Promise<TransactResult> {
    const original = await commitAt(this.#bus, sequence);
    // R53: the records, not the bus's dedupe window, say what the id was first used for.
    const reused = request === undefined ? null : commandIdReused(original, request);
    if (reused) return { ok: false, refusal: reused };
    return { ok: true, sequence, events: original.events, entity: original.entity, duplicate: true, unchanged: false, state: this.#state };
  }

  async #attempt(commandId: string, decide: (state: State) => Decision, request: CommandRequest | undefined): Promise<TransactResult> {
    const applied = appliedSequence(this.#state, commandId);
    if (applied !== undefined) return this.#duplicate(applied, request);
    const decision = decide(this.#state);
    if (!decision.ok) return { ok: false, refusal: decision.refusal };
    if (decision.unchanged) {
      return { ok: true, sequence: this.#state.sequence, events: [], entity: decision.entity, duplicate: false, unchanged: true, state: this.#state };
    }
    const parsed = Commit.safeParse({ commandId, entity: decision.entity, events: decision.events, ...(request === undefined ? {} : { request }) });
    if (!parsed.success) throw new InvalidEvent(0, { cause: parsed.error });
    const commit = parsed.data;
    const fence = this.#state.sequence;
    const h = headers();
    h.set(EVENT_TYPES_HEADER, commit.events.map((e) => e.type).join(","));
    let ack;
    try {
      ack = await this.#bus.js.publish(catalogueSubject(commit.entity.kind, commit.entity.id), JSON.stringify(commit), {
        msgID: commandId,
        expect: { lastSequence: fence },
        headers: h,
      });
    } catch (error) {
      if (isWrongLastSequence(error)) throw new FencedAppend(fence, { cause: error });
      throw error;
    }
    if (ack.duplicate) {
      // Appended by someone else within the dedupe window: the records say where.
      await this.#catchUp();
      const original = appliedSequence(this.#state, commandId);
      if (original === undefined) throw new Error(`the bus called command ${commandId} a duplicate of sequence ${ack.seq}, which the records do not show`);
      return this.#duplicate(original, request);
    }
    this.#state = evolve(this.#state, [{ sequence: ack.seq, commit }]);
    return { ok: true, sequence: ack.seq, events: commit.events, entity: commit.entity, duplicate: false, unchanged: false, state: this.#state };
  }

  snapshot(): Promise<{ sequence: number; bytes: number }> {
    return this.#serial(() => saveSnapshot(this.#stores, this.#state));
  }
}

/**
 * Opens the records: creates or asserts the CATALOGUE stream (ensureCatalogueStream), the snapshot
 * KV bucket and object store; loads the newest snapshot (unless `useSnapshot` is false, or it is
 * ahead of the stream) and folds the tail. Throws InvalidEvent when the tail holds a bad commit.
 */
export async function openCatalogue(nc: NatsConnection, options: CatalogueOptions = {}): Promise<Catalogue> {
  const bus = await busOf(nc);
  await ensureCatalogueStream(bus.jsm, options);
  const stores = await openSnapshotStores(nc, options.replicas ?? 1);
  let state = initialState;
  if (options.useSnapshot !== false) {
    const last = (await bus.jsm.streams.info(CATALOGUE_STREAM)).state.last_seq;
    state = (await loadSnapshot(stores, last)) ?? initialState;
  }
  const catalogue = new JetStreamCatalogue(bus, stores, state);
  await catalogue.catchUp();
  return catalogue;
}
