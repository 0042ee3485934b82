import type { Entity, MeshEvent } from "../events/index.ts";
import type { InvalidEvent, RecordsUnsafe, BehindEvidence } from "./errors.ts";
import type { CommandRequest } from "./reuse.ts";
import type { State } from "../projections/index.ts";
import type { Decision, Refusal } from "../decision.ts";

/** The records adapter's port: the Catalogue a controller holds, its options and answers. */


/**
 * The records' high-water mark the controller keeps outside them (R43): the last sequence it
 * folded and the CATALOGUE stream's creation time (ISO 8601) when it did.
 */
export type RecordsMark = { lastSequence: number; streamCreated: string };

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
