import type { NatsConnection } from "@nats-io/transport-node";
import type { JsMsg, StreamInfo } from "@nats-io/jetstream";
import { CATALOGUE_STREAM, RECORDS_ENTITY, catalogueSubject } from "../names.ts";
import type { Commit } from "../events/index.ts";
import { decodeCommit } from "./decode.ts";
import { initialState, startFold, type Fold, type SequencedCommit, type State } from "../projections/index.ts";
import { FOLD_BATCH, busOf, readMessages, type Bus } from "./read.ts";
import type { ReadOptions } from "./catalogueTypes.ts";

/** Commits read in order, validated and folded: readCommits, replay and every catch-up (R45, R58). */

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
 * Folds the commits after `state.sequence` into it with one fold (startFold: fresh slices from
 * sequence 1, else one draft for the whole read). When a bad commit stops the read, the commits before it are
 * folded into the state handed to `onFolded`, and InvalidEvent is thrown.
 */
export async function foldFrom(
  bus: Bus,
  state: State,
  onFolded: (state: State) => void = () => undefined,
  onInfo: (info: StreamInfo) => void = () => undefined,
): Promise<State> {
  let fold: Fold | null = null;
  try {
    await readFrom(bus, state.sequence + 1, (batch) => fold!.add(batch), {}, () => {
      // One fold for the whole read: fresh slices from sequence 1, else one draft (startFold).
      fold = startFold(state);
    }, onInfo);
  } finally {
    if (fold !== null) onFolded((fold as Fold).finish());
  }
  return fold === null ? state : (fold as Fold).finish();
}

/** Reads back the commit stored at `sequence` (a duplicate's original), validated. */
export async function commitAt(bus: Bus, sequence: number): Promise<Commit> {
  const stored = await bus.jsm.streams.getMessage(CATALOGUE_STREAM, { seq: sequence });
  if (!stored) throw new Error(`the records have no message at sequence ${sequence}`);
  return decodeCommit(stored.seq, stored.subject, stored.data);
}

