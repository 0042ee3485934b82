/**
 * The records adapter (DESIGN.md section 4): commits on the CATALOGUE stream, read back in order,
 * validated, and folded into the state; fenced appends (R40), snapshots (R41), a stream that
 * cannot be purged or have messages deleted (R42).
 */
import { headers, type NatsConnection } from "@nats-io/transport-node";
import { JetStreamApiCodes, JetStreamApiError, type PubAck, type StreamInfo } from "@nats-io/jetstream";
import { CATALOGUE_STREAM, catalogueSubject } from "../names.ts";
import type { Commit, Entity, MeshEvent } from "../events/index.ts";
import { parseCommit } from "./decode.ts";
import { FencedAppend, FenceRetriesExhausted, InvalidEvent, ReadInterrupted, RecordsBehind, RecordsUnsafe, type BehindEvidence } from "./errors.ts";
import { retryFenced } from "./retry.ts";
import { commandIdReused, type CommandRequest } from "./reuse.ts";
import { loadSnapshot, openSnapshotStores, saveSnapshot, type SnapshotStores } from "./snapshots.ts";
import { appliedSequence, evolve, initialState, type State } from "../projections/index.ts";
import type { Decision } from "../decision.ts";
import { busOf, type Bus } from "./read.ts";
import { commitAt, foldFrom } from "./fold.ts";
import { ensureCatalogueStream, recordsUnsafe } from "./stream.ts";
import type { AppendOptions, Catalogue, CatalogueOptions, RecordsMark, TransactResult } from "./catalogueTypes.ts";

export { FencedAppend, FenceRetriesExhausted, InvalidEvent, ReadInterrupted, RecordsBehind, RecordsUnsafe };
export type { BehindEvidence };
export type { AppendOptions, Catalogue, CatalogueOptions, ReadOptions, RecordsMark, TransactResult } from "./catalogueTypes.ts";
export { assertRecordsSafe, ensureCatalogueStream, recordsUnsafe } from "./stream.ts";
export { FOLD_BATCH, READ_BYTES_IN_FLIGHT, READ_CONSUMER_TIMEOUT_MS, READ_STALL_LIMIT_MS } from "./read.ts";
export { readCommits, replay } from "./fold.ts";

/** The header naming a commit's event types, comma-joined, so tools can filter without parsing. */
export const EVENT_TYPES_HEADER = "Mesh-Event-Types";


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
