/**
 * The records adapter (DESIGN.md section 4): commits on the CATALOGUE stream, read back in order,
 * validated, and folded into the state; fenced appends (R40), snapshots (R41), a stream that
 * cannot be purged or have messages deleted (R42).
 */
import { headers, nanos, type NatsConnection, type Status } from "@nats-io/transport-node";
import {
  DeliverPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  RetentionPolicy,
  StorageType,
  jetstream,
  jetstreamManager,
  type Consumer,
  type ConsumerMessages,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  type PubAck,
  type StreamConfig,
  type StreamInfo,
} from "@nats-io/jetstream";
import { CATALOGUE_STREAM, CATALOGUE_SUBJECTS, RECORDS_ENTITY, catalogueSubject } from "../names.ts";
import type { Commit, Entity, MeshEvent } from "../events/index.ts";
import { decodeCommit, parseCommit } from "./decode.ts";
import { FencedAppend, FenceRetriesExhausted, InvalidEvent, ReadInterrupted, RecordsBehind, RecordsUnsafe, type BehindEvidence } from "./errors.ts";
import { retryFenced } from "./retry.ts";
import { commandIdReused, type CommandRequest } from "./reuse.ts";
import { loadSnapshot, openSnapshotStores, saveSnapshot, type SnapshotStores } from "./snapshots.ts";
import { appliedSequence, evolve, initialState, startFold, type Fold, type SequencedCommit, type State } from "../projections/index.ts";
import type { Decision, Refusal } from "../decision.ts";

export { FencedAppend, FenceRetriesExhausted, InvalidEvent, ReadInterrupted, RecordsBehind, RecordsUnsafe };
export type { BehindEvidence };

/**
 * The records' high-water mark the controller keeps outside them (R43): the last sequence it
 * folded and the CATALOGUE stream's creation time (ISO 8601) when it did.
 */
export type RecordsMark = { lastSequence: number; streamCreated: string };

/** The header naming a commit's event types, comma-joined, so tools can filter without parsing. */
export const EVENT_TYPES_HEADER = "Mesh-Event-Types";
/** How many commits the reader hands over at a time. */
export const FOLD_BATCH = 1000;
/**
 * The most commit bytes a read asks the bus for at once (R58). One commit can be hundreds of KiB (a
 * push to 10,000 nodes records ~230 KiB); asking by message count let the server queue past its
 * per-client pending limit (64 MiB by default) while the fold ran, drop the reader as a slow
 * consumer, and the read never resumed. Bytes in flight stay under this bound whatever the sizes.
 */
export const READ_BYTES_IN_FLIGHT = 16 * 1024 * 1024;
/**
 * The most messages a read asks the bus for at once, however small they are. The bound in bytes is
 * kept by asking for READ_BYTES_IN_FLIGHT / (the largest message size known) messages: nats.js
 * takes a pull's limit in messages or in bytes, not both, and its byte-limited pulls stall on
 * their expiry between refills (a read of 87,000 small commits took 23 s that way, 0.7 s by count).
 */
const READ_MESSAGES_IN_FLIGHT = 1000;
/** The message size a read assumes before it has seen one, when the caller knows no average. */
const READ_MESSAGE_BYTES_GUESS = 1024;
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

/** How appendPastHeld and acceptRestore append: `dryRun` decides and appends nothing. */
export type AppendOptions = { dryRun?: boolean };

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
   * as one commit on `catalogueSubject(kind, id)`, Nats-Msg-Id = commandId, fenced by
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
  /**
   * The commit the fold stopped at (R45): the InvalidEvent the last catch-up met, naming its
   * sequence and event types; null when the records folded to their end.
   */
  readonly held: InvalidEvent | null;
  /**
   * Appends one commit past the commit the fold stopped at (R45: an operator's voiding commit),
   * which transact cannot do (its fence is the folded sequence, behind the stream's end). Catches
   * up first; `decide` gets what is held now (null when nothing is) and returns the events or a
   * refusal. The append is fenced by the stream's last sequence read just before it, with
   * Nats-Msg-Id = commandId; then the records are folded again (the voided commit skipped).
   * `request` is recorded with the commit and compared on a duplicate, as transact's (R53).
   * With `{ dryRun: true }` nothing is appended: the result's `sequence` is the stream's last
   * sequence (what the commit would follow) and `events` what it would hold.
   */
  appendPastHeld(commandId: string, decide: (held: InvalidEvent | null) => Decision, request?: CommandRequest, options?: AppendOptions): Promise<TransactResult>;
  /**
   * The world's evidence that the records are behind it (R43), null when there is none. Once set
   * it stays until accepted (`accept`): catchUp, transact and appendPastHeld throw RecordsBehind.
   */
  readonly behind: BehindEvidence[] | null;
  /** Records more evidence (a host's report, a user on the installed list): latches `behind`. */
  reportBehind(evidence: BehindEvidence): void;
  /** Notes that the world saw records up to `sequence` (the lost range of an accepted restore). */
  sawUpTo(sequence: number): void;
  /**
   * Accepts the records as they are (R44): folds them from sequence 1 (the state of a lost future
   * is dropped), asks `decide` for the commit (RecordsRestored and the fresh credentials) given
   * that state, the evidence and the lost range (null when unknown), appends it fenced by the
   * stream's last sequence, clears `behind` and moves the mark to the records as they now are.
   * A commit no fold can read is left held (`held`), to be voided next (R45). `request` is
   * recorded with the commit and compared on a duplicate, as transact's (R53). With
   * `{ dryRun: true }` the same decide runs and nothing changes (no append, still latched): the
   * result's `sequence` is the stream's last sequence and `events` what the commit would hold.
   */
  acceptRestore(
    commandId: string,
    decide: (state: State, evidence: readonly BehindEvidence[], lost: { from: number; to: number } | null) => Decision,
    request?: CommandRequest,
    options?: AppendOptions,
  ): Promise<TransactResult>;
  /** The CATALOGUE stream's creation time (ISO 8601) as last read. */
  readonly streamCreated: string;
  /**
   * Why the records are not safe to serve on (R47: a limit that erases commits, commits already
   * erased), as the stream was last read; null when they are. Read again at every catch-up and by
   * checkSafety; while set, catchUp, transact, appendPastHeld and acceptRestore throw it and
   * append nothing. Clears by itself when a later read finds the stream safe again.
   */
  readonly unsafe: RecordsUnsafe | null;
  /**
   * Reads the CATALOGUE stream's configuration and state now and sets `unsafe` from them (R47);
   * returns it. For a change seen on the bus (the stream's update advisory), between catch-ups.
   */
  checkSafety(): Promise<RecordsUnsafe | null>;
}

export type CatalogueOptions = {
  /** Copies of the stream and the snapshot stores: 1 by default, 3 on a cluster. */
  replicas?: number;
  /** Start from the newest snapshot (default true); false folds from sequence 1. */
  useSnapshot?: boolean;
  /** The stream's dedupe window in ms when the stream is created (server default: 2 minutes). */
  duplicateWindowMs?: number;
  /**
   * Open even when the fold meets a commit it cannot decode (default false: throw InvalidEvent):
   * the state is folded up to the commit before it, and `held` names it (R45). The controller
   * opens this way so that it can serve `mesh replay --void`.
   */
  holdInvalid?: boolean;
  /** Told, in one line, why a snapshot was not used (R46: another shape version, unparsable, ...). */
  onSnapshotIgnored?: (line: string) => void;
  /**
   * The high-water mark kept outside the records (R43), null when none was kept yet. Records
   * behind it, a stream created at another time, or a snapshot ahead of the stream latch
   * `behind` instead of folding as if nothing happened.
   */
  mark?: RecordsMark | null;
  /** Told each time the folded sequence advances (to keep the mark, R43). */
  onAdvance?: (mark: RecordsMark) => void;
};

export type ReadOptions = {
  /** Stop after this sequence (default: the stream's last sequence when the read starts). */
  toSequence?: number;
  /** Commits per batch handed to `onBatch` (default FOLD_BATCH). */
  batchSize?: number;
  /** The most commit bytes asked for at once (default READ_BYTES_IN_FLIGHT, never under one max payload), R58. */
  bytesInFlight?: number;
  /** Milliseconds the read may hand over nothing (bus away, consumer stuck) before it throws ReadInterrupted (default READ_STALL_LIMIT_MS). */
  stallLimitMs?: number;
};

type Bus = { nc: NatsConnection; js: JetStreamClient; jsm: JetStreamManager; reader: JetStreamClient };

async function busOf(nc: NatsConnection): Promise<Bus> {
  return { nc, js: jetstream(nc), jsm: await jetstreamManager(nc, { checkAPI: false }), reader: jetstream(nc, { timeout: READ_CONSUMER_TIMEOUT_MS }) };
}

/**
 * Creates the CATALOGUE stream or asserts the one there: file storage, limits retention, no limit
 * that erases commits, deny_delete and deny_purge (R42). Never changes the configuration of a
 * stream that exists: no mesh credential may (R47, CATALOGUE_ERASE_SUBJECTS), and a limit that
 * erased commits must not be lifted silently, because what it erased is already gone and the
 * operator must know. Throws RecordsUnsafe (R47) naming the setting when the stream there is not
 * safe to serve on (recordsUnsafe).
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
  let existing: StreamInfo;
  try {
    existing = await jsm.streams.info(CATALOGUE_STREAM);
  } catch (error) {
    if (!(error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound)) throw error;
    await jsm.streams.add(config);
    return;
  }
  assertRecordsSafe(existing);
}

/**
 * R47 R42: why CATALOGUE, as its stream info `info` shows it, is not safe to serve on, or null
 * when it is: a limit that erases commits (max_msgs, max_bytes, max_age, max_msgs_per_subject), a
 * first sequence other than 1 or deleted messages (commits were erased), a missing deny_delete or
 * deny_purge (R42), or subjects that no longer capture the records' (appends would go nowhere).
 * The fix names what to set and how: nobody in the mesh may change CATALOGUE's configuration, the
 * controller included, so it is done with a bus user outside the mesh's list. Pure.
 */
export function recordsUnsafe(info: Pick<StreamInfo, "config" | "state">): RecordsUnsafe | null {
  const how = `\`nats stream edit ${CATALOGUE_STREAM}\` as a bus user outside the mesh's list (no mesh credential may change it, R47)`;
  const fix = `restore the setting (${how}) or the records from a backup, then run \`mesh replay\``;
  const limited = (value: number | undefined) => value !== undefined && value > 0;
  const { config, state } = info;
  if (limited(config.max_msgs)) return new RecordsUnsafe("max_msgs", `is ${config.max_msgs}: every commit past it erases the oldest`, `set it to -1: ${fix}`);
  if (limited(config.max_bytes)) return new RecordsUnsafe("max_bytes", `is ${config.max_bytes}: commits past it erase the oldest`, `set it to -1: ${fix}`);
  if (limited(config.max_age)) return new RecordsUnsafe("max_age", `is ${config.max_age} ns: older commits are erased`, `set it to 0: ${fix}`);
  if (limited(config.max_msgs_per_subject)) {
    return new RecordsUnsafe("max_msgs_per_subject", `is ${config.max_msgs_per_subject}: an entity's older commits are erased`, `set it to -1: ${fix}`);
  }
  if (state.last_seq > 0 && state.first_seq !== 1) {
    return new RecordsUnsafe("first_seq", `is ${state.first_seq}: commits 1..${state.first_seq - 1} were erased`, `restore the records from a backup (the erased commits are gone), then run \`mesh replay\``);
  }
  if ((state.num_deleted ?? 0) > 0) return new RecordsUnsafe("num_deleted", `is ${state.num_deleted}: commits were deleted`, `restore the records from a backup, then run \`mesh replay\``);
  if (config.deny_delete !== true) return new RecordsUnsafe("deny_delete", "is off: the records' messages can be deleted (R42)", `set it on: ${how}`);
  if (config.deny_purge !== true) return new RecordsUnsafe("deny_purge", "is off: the records can be purged (R42)", `set it on: ${how}`);
  if (config.subjects !== undefined && !config.subjects.includes(CATALOGUE_SUBJECTS)) {
    return new RecordsUnsafe("subjects", `do not include ${CATALOGUE_SUBJECTS}: commits cannot be appended`, `add it: ${how}`);
  }
  return null;
}

/** R47: throws recordsUnsafe(info) when there is one. Pure: a stream info in, nothing out. */
export function assertRecordsSafe(info: Pick<StreamInfo, "config" | "state">): void {
  const unsafe = recordsUnsafe(info);
  if (unsafe) throw unsafe;
}

/** The subject of the records' own commits (voids, restores): RECORDS_ENTITY. */
const RECORDS_SUBJECT = catalogueSubject(RECORDS_ENTITY.kind, RECORDS_ENTITY.id);

/**
 * The sequences operators voided (R45): every CommitVoided on the records' own subject. Read only
 * when a fold meets a commit it cannot decode (the healthy path never pays for it): the stream's
 * per-subject count first (none: done), then those few messages, filtered on that subject.
 */
async function voidedSequences(bus: Bus): Promise<Set<number>> {
  const voided = new Set<number>();
  const info = await bus.jsm.streams.info(CATALOGUE_STREAM, { subjects_filter: RECORDS_SUBJECT });
  const count = info.state.subjects?.[RECORDS_SUBJECT] ?? 0;
  if (count === 0) return voided;
  const newest = await bus.jsm.streams.getMessage(CATALOGUE_STREAM, { last_by_subj: RECORDS_SUBJECT });
  if (!newest) return voided;
  // The same resuming read as every other (R58), filtered on the records' own subject.
  await readMessages(bus, 1, newest.seq, { filter: RECORDS_SUBJECT }, (m) => {
    try {
      for (const event of decodeCommit(m.seq, m.subject, m.data).events) if (event.type === "CommitVoided") voided.add(event.sequence);
    } catch {
      // an undecodable message on this subject voids nothing (it may be voided itself)
    }
    return false;
  });
  return voided;
}

/**
 * Milliseconds the creation of a read's consumer may take before the attempt ends as unavailable
 * and another is made (R62): on a cluster with a server down, 2.9.10 places the read's one-replica
 * consumer on the dead peer about one time in three and its creation never answers; the next
 * attempt is placed again. A healthy creation takes milliseconds.
 */
export const READ_CONSUMER_TIMEOUT_MS = 2_000;

/** Why one attempt of a read ended before the read's last sequence. */
type Interruption = { reason: "disconnected" | "stalled" | "unavailable" | "ended" | "narrowed"; cause?: unknown };

/** What a read's `take` says of a message: go on, stop (the last was reached), or ask again for fewer at a time. */
type Taken = "more" | "done" | "narrow";

/**
 * Follows the connection's state for one read (R58): whether it is connected now, and a promise
 * that settles at the next disconnect or at the next reconnect. The client reconnects by itself;
 * the read only needs to know when to stop asking and when to ask again.
 */
class ConnectionWatch {
  connected = true;
  #iterator: AsyncIterable<Status> & { stop(): void };
  #waiters: Array<{ on: "disconnect" | "reconnect" | "close"; resolve: () => void }> = [];
  constructor(nc: NatsConnection) {
    const iterator = nc.status() as AsyncIterable<Status> & { stop(): void };
    this.#iterator = iterator;
    void (async () => {
      for await (const status of iterator) {
        if (status.type === "disconnect") this.connected = false;
        if (status.type === "reconnect") this.connected = true;
        if (status.type === "disconnect" || status.type === "reconnect" || status.type === "close") this.#settle(status.type);
      }
    })().catch(() => undefined);
    // A closed connection ends reconnecting for good: wake every waiter.
    void nc.closed().then(() => this.#settle("close", true));
  }
  #settle(type: "disconnect" | "reconnect" | "close", all = false): void {
    const ready = this.#waiters.filter((w) => all || w.on === type || type === "close");
    this.#waiters = this.#waiters.filter((w) => !ready.includes(w));
    for (const w of ready) w.resolve();
  }
  /** Settles at the next event of kind `on` (or when the connection closes). */
  next(on: "disconnect" | "reconnect"): Promise<void> {
    return new Promise((resolve) => this.#waiters.push({ on, resolve }));
  }
  stop(): void {
    this.#iterator.stop();
    this.#settle("close", true);
  }
}

/** Milliseconds a pull request waits on the server; heartbeats come every half of it (R58). */
const READ_EXPIRES_MS = 5_000;
/** Default of ReadOptions.stallLimitMs: how long a read may hand over nothing before it throws. */
export const READ_STALL_LIMIT_MS = 60_000;
/** Pause between attempts that ended without a disconnect (a refused or lost consumer), ms. */
const READ_RETRY_MS = [50, 100, 200, 400, 800, 1000];

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * One attempt of a read: an ordered consumer from `next` (on `filter` when given), asked for at most
 * `messages` at a time, until `take` says the last sequence was reached (null), or that the
 * messages grew too large for that count ("narrowed"), or something else ends the attempt (the
 * Interruption). Messages already received when it ends are still handed to `take`, in order.
 */
async function readAttempt(
  bus: Bus,
  watch: ConnectionWatch,
  next: number,
  messagesAtOnce: number,
  filter: string | undefined,
  take: (m: JsMsg) => Taken,
): Promise<Interruption | null> {
  if (!watch.connected) return { reason: "disconnected" };
  let consumer: Consumer;
  let messages: ConsumerMessages;
  try {
    consumer = await bus.reader.consumers.get(CATALOGUE_STREAM, {
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: next,
      ...(filter === undefined ? {} : { filter_subjects: filter }),
    });
    messages = await consumer.consume({ max_messages: messagesAtOnce, expires: READ_EXPIRES_MS });
  } catch (error) {
    // JetStream not ready yet after a restart, or the connection went while asking.
    return { reason: watch.connected ? "unavailable" : "disconnected", cause: error };
  }
  let ended: Interruption | null = null;
  const end = (interruption: Interruption) => {
    if (ended !== null) return;
    ended = interruption;
    // Stops the iterator after the messages it already holds (they are valid and in order).
    void messages.close().catch(() => undefined);
  };
  void watch.next("disconnect").then(() => end({ reason: "disconnected" }));
  void (async () => {
    for await (const status of messages.status()) {
      // The library recreates an ordered consumer on a gap by itself; these are the signs that it
      // will not get going again on its own (the server lost the consumer, or nothing arrives).
      if (status.type === "heartbeats_missed" || status.type === "consumer_deleted" || status.type === "consumer_not_found" || status.type === "stream_not_found") {
        end({ reason: "stalled", cause: new Error(`the consumer reported ${status.type}`) });
      }
    }
  })().catch(() => undefined);
  let done = false;
  try {
    for await (const m of messages) {
      const taken = take(m);
      if (taken === "done") { done = true; break; }
      if (taken === "narrow") { ended ??= { reason: "narrowed" }; break; }
    }
  } catch (error) {
    if (ended === null) ended = { reason: watch.connected ? "stalled" : "disconnected", cause: error };
  } finally {
    await messages.close().catch(() => undefined);
    // An ordered consumer left behind would live on the server until its inactivity threshold.
    void consumer.delete().catch(() => undefined);
  }
  return done ? null : (ended ?? { reason: "ended" });
}

/**
 * What readMessages needs besides its range: a subject filter, ReadOptions' limits, and the average
 * size of the messages to read when the caller knows it (stream info: bytes / messages).
 */
type RawReadOptions = Pick<ReadOptions, "bytesInFlight" | "stallLimitMs"> & { filter?: string; averageBytes?: number };

/**
 * Every read of the CATALOGUE stream goes through here (R58): the messages from `from` to `last`
 * (on `options.filter` only, when given), in order, each once, handed to `take` until it returns
 * true or `last` was handed over; at most `bytesInFlight` (default READ_BYTES_IN_FLIGHT) asked for
 * at a time, as a count of messages: that many bytes over the largest message size known (the
 * stream's average to begin with, `options.averageBytes`); a larger message starts a new attempt
 * asking for fewer. A lost connection (a slow-consumer drop, a bus restart) or a consumer that stops
 * delivering ends the current attempt; the read starts again from the sequence after the last one
 * handed over, on a fresh consumer, as soon as the client is reconnected. After the same server
 * dropped the reader, the bytes in flight are halved (never under one max payload) so that the next
 * attempt fits the server's per-client pending limit. Returns the last sequence handed over (from -
 * 1 when none). Throws ReadInterrupted when nothing was handed over for `stallLimitMs` (default
 * READ_STALL_LIMIT_MS) or the connection closed.
 */
async function readMessages(bus: Bus, from: number, last: number, options: RawReadOptions, take: (m: JsMsg) => boolean): Promise<number> {
  let read = from - 1;
  if (from > last) return read;
  const stallLimitMs = options.stallLimitMs ?? READ_STALL_LIMIT_MS;
  // One message can be as large as the server's max payload (plus headers): asking for less
  // would never deliver it.
  const floor = (bus.nc.info?.max_payload ?? 1024 * 1024) + 64 * 1024;
  let bytes = Math.max(floor, options.bytesInFlight ?? READ_BYTES_IN_FLIGHT);
  // The largest message size known so far: asking for bytes / largest messages at a time keeps the
  // bytes in flight under `bytes`. A larger message ends the attempt so the next one asks for fewer.
  // Four times the average: a history of small commits still reads 1,000 at a time, and one
  // whose pushes are large starts narrow, before it has met them.
  let largest = Math.max(READ_MESSAGE_BYTES_GUESS, 4 * (options.averageBytes ?? 0));
  const atOnce = () => Math.max(1, Math.min(READ_MESSAGES_IN_FLIGHT, Math.floor(bytes / largest)));
  let asked = atOnce();
  let finished = false;
  const handOver = (m: JsMsg): Taken => {
    if (m.seq <= read) return "more"; // already handed over by an earlier attempt
    if (m.seq > last) { finished = true; return "done"; }
    if (m.data.length > largest) {
      largest = m.data.length;
      // The consumer still owes up to `asked` messages that may be as large: end it at once,
      // before this one is folded, and ask again from this one for fewer.
      if (atOnce() < asked) return "narrow";
    }
    read = m.seq;
    if (take(m) || m.seq >= last) { finished = true; return "done"; }
    return "more";
  };
  const watch = new ConnectionWatch(bus.nc);
  let idleSince = Date.now();
  let retries = 0;
  try {
    while (!finished) {
      const server = bus.nc.info?.server_id;
      const before = read;
      asked = atOnce();
      const interruption = await readAttempt(bus, watch, read + 1, asked, options.filter, handOver);
      if (interruption === null) break;
      if (read > before) { idleSince = Date.now(); retries = 0; }
      if (interruption.reason === "narrowed") continue;
      if (bus.nc.isClosed()) throw new ReadInterrupted(read + 1, "the connection to the bus closed", { cause: interruption.cause });
      const left = stallLimitMs - (Date.now() - idleSince);
      if (left <= 0) {
        throw new ReadInterrupted(read + 1, `nothing was handed over for ${stallLimitMs} ms (last: ${interruption.reason})`, { cause: interruption.cause });
      }
      if (!watch.connected) {
        // Wait for the client to reconnect, never past the stall limit.
        await Promise.race([watch.next("reconnect"), sleep(left)]);
        // Dropped by the same server (a restart changes the server id): it found the reader too
        // slow for its pending limit. Ask for less at a time from now on.
        if (watch.connected && bus.nc.info?.server_id === server) bytes = Math.max(floor, Math.floor(bytes / 2));
        continue;
      }
      if (interruption.reason === "disconnected") continue;
      await sleep(Math.min(left, READ_RETRY_MS[Math.min(retries, READ_RETRY_MS.length - 1)]!));
      retries += 1;
    }
  } finally {
    watch.stop();
  }
  return read;
}

/**
 * The read under readCommits, replay and every catch-up: readMessages (R58) from `fromSequence`
 * to the stream's last sequence (or `options.toSequence`), each commit validated and handed to
 * `onBatch` in batches. A commit that does not decode ends the read with its InvalidEvent, after
 * the batch before it is handed over, unless an operator voided it (R45): then it is skipped.
 */
async function readFrom(
  bus: Bus,
  fromSequence: number,
  onBatch: (batch: SequencedCommit[]) => void,
  options: ReadOptions = {},
  onCount: (count: number) => void = () => undefined,
  onInfo: (info: StreamInfo) => void = () => undefined,
): Promise<number> {
  const from = Math.max(1, fromSequence);
  const info = await bus.jsm.streams.info(CATALOGUE_STREAM);
  onInfo(info);
  const last = Math.min(options.toSequence ?? Number.POSITIVE_INFINITY, info.state.last_seq);
  if (from > last) return from - 1;
  onCount(last - from + 1);
  const averageBytes = info.state.messages > 0 ? Math.ceil(info.state.bytes / info.state.messages) : undefined;
  const batchSize = options.batchSize ?? FOLD_BATCH;
  let batch: SequencedCommit[] = [];
  let read = from - 1;
  let failure: { sequence: number; error: unknown } | null = null;
  let voided: Set<number> | null = null;
  const take = (m: JsMsg): boolean => {
    let commit: Commit;
    try {
      commit = decodeCommit(m.seq, m.subject, m.data);
    } catch (error) {
      // Settled below: a voided commit is skipped (R45), any other ends the read.
      failure = { sequence: m.seq, error };
      return true;
    }
    batch.push({ sequence: m.seq, commit });
    read = m.seq;
    if (batch.length >= batchSize) {
      const full = batch;
      batch = [];
      onBatch(full);
    }
    return false;
  };
  try {
    for (;;) {
      await readMessages(bus, read + 1, last, { ...options, averageBytes }, take);
      if (failure === null) break;
      const bad: { sequence: number; error: unknown } = failure;
      voided ??= await voidedSequences(bus);
      if (!voided.has(bad.sequence)) break;
      // R45: an operator voided this commit; every fold skips it alike (replay, snapshot + tail).
      failure = null;
      read = bad.sequence;
      if (read >= last) break;
    }
  } finally {
    // Fold what came before a bad message (or before the read stopped), then report it.
    if (batch.length > 0) onBatch(batch);
  }
  if (failure !== null) throw (failure as { error: unknown }).error;
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
async function foldFrom(
  bus: Bus,
  state: State,
  onFolded: (state: State) => void = () => undefined,
  onInfo: (info: StreamInfo) => void = () => undefined,
): Promise<State> {
  let fold: Fold | null = null;
  try {
    await readFrom(bus, state.sequence + 1, (batch) => fold!.add(batch), {}, (count) => {
      // A long read folds into a private copy, changed in place; a short tail shares what it does not change.
      fold = startFold(state, state.sequence === 0 || count >= COPY_FOLD_FROM ? "copy" : "share");
    }, onInfo);
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

/**
 * The commit of a decision, parsed by its zod schema (every event is validated when written, section
 * 4); throws InvalidEvent (sequence 0) when the decided events do not parse.
 */
function validCommit(commandId: string, decision: { entity: Entity; events: MeshEvent[] }, request: CommandRequest | undefined): Commit {
  const parsed = parseCommit({ commandId, entity: decision.entity, events: decision.events, ...(request === undefined ? {} : { request }) });
  if (!parsed.success) throw new InvalidEvent(0, { cause: parsed.error });
  return parsed.data;
}

function isWrongLastSequence(error: unknown): boolean {
  return error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamWrongLastSequence;
}

class JetStreamCatalogue implements Catalogue {
  #bus: Bus;
  #stores: SnapshotStores;
  #state: State;
  #queue: Promise<unknown> = Promise.resolve();
  #held: InvalidEvent | null = null;
  #behind: BehindEvidence[] | null = null;
  #unsafe: RecordsUnsafe | null = null;
  /** The highest sequence the world is known to have seen (the mark, a running fold): for the lost range. */
  #seen = 0;
  #created: string;
  #onAdvance: (mark: RecordsMark) => void;
  readonly startedFrom: number;

  constructor(bus: Bus, stores: SnapshotStores, state: State, created: string, onAdvance: (mark: RecordsMark) => void = () => undefined, startedFrom = state.sequence) {
    this.#bus = bus;
    this.#stores = stores;
    this.#state = state;
    this.#created = created;
    this.#onAdvance = onAdvance;
    this.startedFrom = startedFrom;
  }

  get behind(): BehindEvidence[] | null {
    return this.#behind;
  }

  get streamCreated(): string {
    return this.#created;
  }

  get unsafe(): RecordsUnsafe | null {
    return this.#unsafe;
  }

  async checkSafety(): Promise<RecordsUnsafe | null> {
    this.#unsafe = recordsUnsafe(await this.#bus.jsm.streams.info(CATALOGUE_STREAM));
    return this.#unsafe;
  }

  reportBehind(evidence: BehindEvidence): void {
    if (this.#behind?.some((e) => e.detail === evidence.detail)) return;
    this.#behind = [...(this.#behind ?? []), evidence];
  }

  /** Notes that the world saw records up to `sequence` (for the lost range of a restore). */
  sawUpTo(sequence: number): void {
    this.#seen = Math.max(this.#seen, sequence);
  }

  acceptRestore(
    commandId: string,
    decide: (state: State, evidence: readonly BehindEvidence[], lost: { from: number; to: number } | null) => Decision,
    request?: CommandRequest,
    options: AppendOptions = {},
  ): Promise<TransactResult> {
    return this.#serial(async () => {
      const info = await this.#bus.jsm.streams.info(CATALOGUE_STREAM);
      // R47: accepting records that erase commits would append onto what erases the next one.
      this.#unsafe = recordsUnsafe(info);
      if (this.#unsafe !== null) throw this.#unsafe;
      // A commit no fold can read does not stop the acceptance: it stays held, to be voided next.
      let state = initialState;
      let held = false;
      try {
        state = await foldFrom(this.#bus, initialState, (partial) => { state = partial; });
      } catch (error) {
        if (!(error instanceof InvalidEvent)) throw error;
        held = true;
      }
      const applied = appliedSequence(state, commandId);
      if (applied !== undefined) {
        if (options.dryRun === true) return this.#duplicate(applied, request);
        this.#state = state;
        return this.#duplicate(applied, request);
      }
      const seen = Math.max(this.#seen, this.#state.sequence);
      const lost = seen > info.state.last_seq ? { from: info.state.last_seq + 1, to: seen } : null;
      const decision = decide(state, this.#behind ?? [], lost);
      if (!decision.ok) return { ok: false, refusal: decision.refusal };
      if (decision.unchanged) throw new Error("acceptRestore: a restore always appends");
      if (options.dryRun === true) {
        return { ok: true, sequence: info.state.last_seq, events: decision.events, entity: decision.entity, duplicate: false, unchanged: false, state: this.#state };
      }
      const { commit, ack } = await this.#publishFenced(commandId, decision, request, info.state.last_seq);
      this.#state = !held && ack.seq === state.sequence + 1 ? evolve(state, [{ sequence: ack.seq, commit }]) : state;
      this.#behind = null;
      this.#seen = 0;
      this.#created = info.created;
      await this.#catchUp().catch((error: unknown) => {
        if (!(error instanceof InvalidEvent)) throw error;
      });
      this.#advanced();
      return { ok: true, sequence: ack.seq, events: commit.events, entity: commit.entity, duplicate: ack.duplicate, unchanged: false, state: this.#state };
    });
  }

  /** Tells onAdvance the mark now (after the folded sequence moved, or a restore was accepted). */
  #advanced(): void {
    if (this.#behind === null) this.#onAdvance({ lastSequence: this.#state.sequence, streamCreated: this.#created });
  }

  /**
   * R47 and R43 while running: the stream erases commits or erased some (unsafe, latched until a
   * read finds it safe again), is shorter than what was folded, or was created anew (behind).
   */
  #checkStream(info: StreamInfo): void {
    this.#unsafe = recordsUnsafe(info);
    if (this.#unsafe !== null) throw this.#unsafe;
    if (info.state.last_seq < this.#state.sequence) {
      this.sawUpTo(this.#state.sequence);
      this.reportBehind({ kind: "records-went-back", detail: `the records end at sequence ${info.state.last_seq}, but this controller folded them to ${this.#state.sequence}` });
    }
    if (info.created !== this.#created) {
      this.reportBehind({ kind: "stream-recreated", detail: `the CATALOGUE stream was created at ${info.created}, not ${this.#created} as when this controller folded it` });
    }
    if (this.#behind !== null) throw new RecordsBehind(this.#behind);
  }

  get state(): State {
    return this.#state;
  }

  get held(): InvalidEvent | null {
    return this.#held;
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
    if (this.#behind !== null) throw new RecordsBehind(this.#behind);
    try {
      const before = this.#state.sequence;
      const state = await foldFrom(this.#bus, this.#state, (state) => { this.#state = state; }, (info) => this.#checkStream(info));
      this.#held = null;
      if (this.#state.sequence !== before) this.#advanced();
      return state;
    } catch (error) {
      if (error instanceof InvalidEvent) this.#held = error;
      throw error;
    }
  }

  appendPastHeld(commandId: string, decide: (held: InvalidEvent | null) => Decision, request?: CommandRequest, options: AppendOptions = {}): Promise<TransactResult> {
    return this.#serial(async () => {
      if (this.#behind !== null) throw new RecordsBehind(this.#behind);
      await this.#catchUp().catch((error: unknown) => {
        if (!(error instanceof InvalidEvent)) throw error;
      });
      const applied = appliedSequence(this.#state, commandId);
      if (applied !== undefined) return this.#duplicate(applied, request);
      const decision = decide(this.#held);
      if (!decision.ok) return { ok: false, refusal: decision.refusal };
      if (decision.unchanged) {
        return { ok: true, sequence: this.#state.sequence, events: [], entity: decision.entity, duplicate: false, unchanged: true, state: this.#state };
      }
      const fence = (await this.#bus.jsm.streams.info(CATALOGUE_STREAM)).state.last_seq;
      if (options.dryRun === true) {
        return { ok: true, sequence: fence, events: decision.events, entity: decision.entity, duplicate: false, unchanged: false, state: this.#state };
      }
      const { commit, ack } = await this.#publishFenced(commandId, decision, request, fence);
      await this.#catchUp().catch((error: unknown) => {
        if (!(error instanceof InvalidEvent)) throw error;
      });
      return { ok: true, sequence: ack.seq, events: commit.events, entity: commit.entity, duplicate: ack.duplicate, unchanged: false, state: this.#state };
    });
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

  /**
   * Appends one decided commit to CATALOGUE, fenced on `fence` (the last sequence the decision
   * saw) and deduplicated by `commandId`; the commit records `request` (R53). Returns the commit as
   * parsed and the bus's ack (which may say `duplicate`). Throws FencedAppend when another append
   * landed past `fence`, and InvalidEvent (sequence 0) when the decided events do not parse.
   */
  async #publishFenced(
    commandId: string,
    decision: { entity: Entity; events: MeshEvent[] },
    request: CommandRequest | undefined,
    fence: number,
  ): Promise<{ commit: Commit; ack: PubAck }> {
    const commit = validCommit(commandId, decision, request);
    return { commit, ack: await this.#append(commit, fence) };
  }

  /**
   * Publishes `commit` (already validated) on its entity's subject, Nats-Msg-Id = its command id,
   * fenced on `fence` (R40). Resolves to the bus's ack; rejects with FencedAppend when another
   * append landed past `fence`. The client writes the message on a microtask after this returns.
   */
  #append(commit: Commit, fence: number): Promise<PubAck> {
    const h = headers();
    h.set(EVENT_TYPES_HEADER, commit.events.map((e) => e.type).join(","));
    return this.#bus.js.publish(catalogueSubject(commit.entity.kind, commit.entity.id), JSON.stringify(commit), {
      msgID: commit.commandId, expect: { lastSequence: fence }, headers: h,
    }).catch((error: unknown) => {
      if (isWrongLastSequence(error)) throw new FencedAppend(fence, { cause: error });
      throw error;
    });
  }

  async #attempt(commandId: string, decide: (state: State) => Decision, request: CommandRequest | undefined): Promise<TransactResult> {
    if (this.#behind !== null) throw new RecordsBehind(this.#behind);
    // R47: an append onto records that erase commits erases one more. Latched: read again (the
    // limit may have been lifted since), which costs a request only while the records are unsafe.
    const unsafe = this.#unsafe === null ? null : await this.checkSafety();
    if (unsafe !== null) throw unsafe;
    const applied = appliedSequence(this.#state, commandId);
    if (applied !== undefined) return this.#duplicate(applied, request);
    const decision = decide(this.#state);
    if (!decision.ok) return { ok: false, refusal: decision.refusal };
    if (decision.unchanged) {
      return { ok: true, sequence: this.#state.sequence, events: [], entity: decision.entity, duplicate: false, unchanged: true, state: this.#state };
    }
    const before = this.#state;
    const fence = before.sequence;
    const commit = validCommit(commandId, decision, request);
    const acked = this.#append(commit, fence);
    acked.catch(() => undefined); // awaited below; the fold runs first
    // While the append is on the bus, fold the commit as it lands if the fence holds: right after
    // `fence`. evolve is pure, so this state is dropped unless the ack says exactly that. The await
    // lets the client write the message first (it flushes on a microtask queued by the publish).
    await Promise.resolve();
    const landed = evolve(before, [{ sequence: fence + 1, commit }]);
    const ack = await acked;
    if (ack.duplicate) {
      // Appended by someone else within the dedupe window: the records say where.
      await this.#catchUp();
      const original = appliedSequence(this.#state, commandId);
      if (original === undefined) throw new Error(`the bus called command ${commandId} a duplicate of sequence ${ack.seq}, which the records do not show`);
      return this.#duplicate(original, request);
    }
    this.#state = ack.seq === fence + 1 ? landed : evolve(before, [{ sequence: ack.seq, commit }]);
    this.#advanced();
    return { ok: true, sequence: ack.seq, events: commit.events, entity: commit.entity, duplicate: false, unchanged: false, state: this.#state };
  }

  snapshot(): Promise<{ sequence: number; bytes: number }> {
    // Never over the snapshot of a lost future while the records are behind (R43): it is evidence.
    return this.#serial(async () => {
      if (this.#behind !== null) throw new RecordsBehind(this.#behind);
      return saveSnapshot(this.#stores, this.#state);
    });
  }
}

/**
 * Opens the records: creates or asserts the CATALOGUE stream (ensureCatalogueStream), the snapshot
 * KV bucket and object store; loads the newest snapshot (unless `useSnapshot` is false, or it is
 * ahead of the stream) and folds the tail. Throws InvalidEvent when the tail holds a bad commit
 * (unless `holdInvalid`: then `held` names it), RecordsUnsafe when the stream erases commits (R47).
 */
export async function openCatalogue(nc: NatsConnection, options: CatalogueOptions = {}): Promise<Catalogue> {
  const bus = await busOf(nc);
  await ensureCatalogueStream(bus.jsm, options);
  const stores = await openSnapshotStores(nc, options.replicas ?? 1);
  const info = await bus.jsm.streams.info(CATALOGUE_STREAM);
  const last = info.state.last_seq;
  // R43: the mark kept outside the records says whether they went back (restored, or a lost tail).
  const evidence: BehindEvidence[] = [];
  const mark = options.mark ?? null;
  if (mark !== null && mark.lastSequence > last) {
    evidence.push({ kind: "records-behind-mark", detail: `the records end at sequence ${last}, but the controller folded them to ${mark.lastSequence} before (its high-water mark)` });
  }
  if (mark !== null && mark.streamCreated !== info.created) {
    evidence.push({ kind: "stream-recreated", detail: `the CATALOGUE stream was created at ${info.created}, but the controller's mark knows one created at ${mark.streamCreated}` });
  }
  let state = initialState;
  if (options.useSnapshot !== false && evidence.length === 0) {
    const loaded = await loadSnapshot(stores, last);
    if (loaded.state === null && loaded.ignored !== undefined) options.onSnapshotIgnored?.(loaded.ignored);
    if (loaded.state === null && loaded.ahead !== undefined) {
      evidence.push({ kind: "snapshot-ahead", detail: `the newest snapshot is at sequence ${loaded.ahead}, past the records' end at ${last}` });
    }
    state = loaded.state ?? initialState;
  }
  // With evidence, the records are folded from 1 (no snapshot) for the operator to read, then
  // `behind` is latched: nothing is appended or sent, and the mark is not moved back.
  if (evidence.length > 0) {
    let folded = state;
    await foldFrom(bus, state, (partial) => { folded = partial; }).catch((error: unknown) => {
      if (!(options.holdInvalid && error instanceof InvalidEvent)) throw error;
    });
    const behind = new JetStreamCatalogue(bus, stores, folded, info.created, options.onAdvance, 0);
    for (const e of evidence) behind.reportBehind(e);
    if (mark !== null) behind.sawUpTo(mark.lastSequence);
    return behind;
  }
  const catalogue = new JetStreamCatalogue(bus, stores, state, info.created, options.onAdvance);
  await catalogue.catchUp().catch((error: unknown) => {
    if (!(options.holdInvalid && error instanceof InvalidEvent)) throw error;
  });
  return catalogue;
}
