import type { Envelope } from "../commands/envelope.ts";
import { decideDeclarationsSent } from "../commands/declarationsSent.ts";
import { dialAgainAfter, retryJetStream } from "../bus/retry.ts";
import type { PushContext } from "./context.ts";

/** Recording what a round sent (R31): DeclarationSent commits appended while the round still sends. */

/** DeclarationSent events per commit: ~250 bytes each, so one commit stays far under 1 MiB. */
export const SENT_PER_COMMIT = 1000;
/** Acknowledged sends that start a DeclarationSent commit while a round still sends (SentRecorder). */
export const RECORD_BATCH = 250;
/** Pauses before the append of what a push sent is tried again (about 12 s in all: a cluster electing leaders, R62). */
export const RECORD_RETRY_DELAYS_MS: readonly number[] = [100, 250, 500, 1_000, 1_500, 2_500, 3_000, 3_000];

/**
 * Appends one DeclarationSent commit (R31) for `sent` (at most SENT_PER_COMMIT), entity push/<id>,
 * command id `commandId`. Returns its sequence. Throws when the append is refused or JetStream
 * stays unavailable.
 */
async function appendSent(
  ctx: PushContext,
  pushId: string,
  commandId: string,
  sent: ReadonlyArray<{ node: string; digest: string }>,
  recordsSequence: number,
  actor: string,
  now: string,
): Promise<number> {
  const input = { pushId, sent, recordsSequence };
  const envelope: Envelope = { commandId, actor, now, secrets: [] };
  // After the broker's reload a cluster's servers may answer JetStream late for seconds (leaders
  // moving, R62): the append is retried, with its command id, so it never lands twice.
  const result = await retryJetStream(`recording what push ${pushId} sent`,
    () => ctx.catalogue.transact(commandId, (state) => decideDeclarationsSent(state, input, envelope)),
    {
      delaysMs: RECORD_RETRY_DELAYS_MS,
      // Seen on a 2.9.10 cluster: after the reload that changed the controller's key, its
      // reconnected connection got no JetStream answers while core messages flowed; a fresh
      // connection does (dialAgainAfter).
      onRetry: (attempt) => { if (dialAgainAfter(attempt)) void ctx.nc.reconnect().catch(() => undefined); },
    });
  if (!result.ok) throw new Error(`push ${pushId}: recording sent declarations was refused: ${result.refusal.code}`);
  return result.sequence;
}

/**
 * Records what a round sent (R31) while it sends: each node whose declaration the bus acknowledged
 * is recorded as sent (DeclarationSent), in commits of up to SENT_PER_COMMIT appended one at a
 * time, as acknowledgements gather (a commit starts when RECORD_BATCH wait and no append runs), so
 * the records are appended while later declarations are in flight instead of after the last one.
 * `settle` waits for the appends running (before a user list goes out: the reload it brings fails
 * JetStream requests in flight); `finish` records every sent node not recorded yet, in commits
 * `<push>-sent-<round>-<n>`, and returns the sequences of all the round's commits, ascending. An
 * append that failed while sending is thrown by `settle` or `finish`.
 */
export class SentRecorder {
  readonly #waiting: Array<{ node: string; digest: string }> = [];
  readonly #recorded = new Set<string>();
  readonly #sequences: number[] = [];
  #running: Promise<void> | null = null;
  #failed: { error: unknown } | null = null;
  #batch = 0;

  constructor(
    private readonly ctx: PushContext,
    private readonly pushId: string,
    private readonly round: number,
    private readonly recordsSequence: number,
    private readonly actor: string,
    private readonly now: string,
  ) {}

  /** `node` was sent `digest` and the bus acknowledged it. */
  sent(node: string, digest: string): void {
    this.#waiting.push({ node, digest });
    if (this.#running === null && this.#waiting.length >= RECORD_BATCH) this.#start();
  }

  #start(): void {
    const batch = this.#waiting.splice(0, SENT_PER_COMMIT);
    for (const s of batch) this.#recorded.add(s.node);
    this.#running = this.#append(batch).then(
      () => {
        this.#running = null;
        if (this.#failed === null && this.#waiting.length >= RECORD_BATCH) this.#start();
      },
      (error: unknown) => {
        this.#failed ??= { error };
        this.#running = null;
      },
    );
  }

  async #append(batch: ReadonlyArray<{ node: string; digest: string }>): Promise<void> {
    const commandId = `${this.pushId}-sent-${this.round}-${this.#batch++}`;
    this.#sequences.push(await appendSent(this.ctx, this.pushId, commandId, batch, this.recordsSequence, this.actor, this.now));
  }

  /** Waits until no append runs; throws the error of one that failed. */
  async settle(): Promise<void> {
    while (this.#running !== null) await this.#running;
    if (this.#failed !== null) throw this.#failed.error;
  }

  /** Records the sent nodes (`sent`: all the round sent) not recorded yet; the round's commit sequences, ascending. */
  async finish(sent: ReadonlyArray<{ node: string; digest: string }>): Promise<number[]> {
    await this.settle();
    this.#waiting.length = 0;
    const rest = sent.filter((s) => !this.#recorded.has(s.node));
    for (let start = 0; start < rest.length; start += SENT_PER_COMMIT) await this.#append(rest.slice(start, start + SENT_PER_COMMIT));
    return [...this.#sequences].sort((a, b) => a - b);
  }
}
