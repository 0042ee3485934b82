/**
 * The few typed errors of the records adapter (STYLE.md 3): each has a `name` and a `cause`,
 * and is mapped to a reply code in one place by whoever serves commands.
 */
import type { BehindEvidence } from "../events/RecordsRestored.ts";

/**
 * An append was refused because the stream moved past the sequence the writer had folded (R40):
 * another writer won. `expectedSequence` is the fence the append carried.
 */
export class FencedAppend extends Error {
  override readonly name = "FencedAppend";
  readonly expectedSequence: number;
  constructor(expectedSequence: number, options?: { cause?: unknown }) {
    super(`append fenced out: the records moved past sequence ${expectedSequence}`, options);
    this.expectedSequence = expectedSequence;
  }
}

/**
 * An event that does not pass its zod schema (or a message that is not a commit at all).
 * `sequence` is the stream sequence of the bad message; 0 when it was caught before writing.
 * `types` are the event types the message names (what a newer release wrote, say), empty when it
 * names none. `cause` is the zod (or JSON) error. A fold that meets one stops: it is never skipped
 * unless an operator voided that sequence (R45). The message is one line: it names the sequence,
 * the types, the first problems and the way out (`mesh replay --void <sequence>`).
 */
export class InvalidEvent extends Error {
  override readonly name = "InvalidEvent";
  readonly sequence: number;
  readonly types: string[];
  constructor(sequence: number, options?: { cause?: unknown; types?: readonly string[] }) {
    const types = [...(options?.types ?? [])];
    const named = types.length > 0 ? ` (event type${types.length > 1 ? "s" : ""} ${types.join(", ")})` : "";
    const where = sequence === 0 ? `a commit about to be written${named}` : `the commit at sequence ${sequence}${named}`;
    const detail = oneLine(options?.cause);
    const next = sequence === 0 ? "" : `; the fold stops there: see \`mesh replay\`, and void it with \`mesh replay --void ${sequence} --reason <why>\` (R45)`;
    super(`invalid ${where}${detail ? `: ${detail}` : ""}${next}`, options?.cause === undefined ? undefined : { cause: options.cause });
    this.sequence = sequence;
    this.types = types;
  }
}

/** A cause as one short line: a zod error's issues as `path: message`, else the first line of its message. */
function oneLine(cause: unknown): string {
  if (!(cause instanceof Error)) return "";
  const issues = (cause as { issues?: Array<{ path: PropertyKey[]; message: string }> }).issues;
  const text = Array.isArray(issues)
    ? issues.slice(0, 3).map((i) => `${i.path.map(String).join(".") || "(commit)"}: ${i.message}`).join("; ") + (issues.length > 3 ? ` (+${issues.length - 3} more)` : "")
    : cause.message.split("\n")[0]!;
  return text.replace(/\s+/g, " ").slice(0, 300);
}

/** The fence-and-retry policy gave up: every attempt was fenced out. `cause` is the last FencedAppend. */
export class FenceRetriesExhausted extends Error {
  override readonly name = "FenceRetriesExhausted";
  readonly attempts: number;
  constructor(attempts: number, options?: { cause?: unknown }) {
    super(`append fenced out ${attempts} times in a row: another writer keeps winning`, options);
    this.attempts = attempts;
  }
}

/**
 * The CATALOGUE stream is set up so that commits are (or were) erased (R47): a limit that drops
 * the oldest commits (`max_msgs`, `max_bytes`, `max_age`, `max_msgs_per_subject`), a first
 * sequence other than 1, or deleted messages. `setting` names the stream setting (or state field)
 * and `fix` what to do. The controller does not serve on such records.
 */
export class RecordsUnsafe extends Error {
  override readonly name = "RecordsUnsafe";
  readonly setting: string;
  constructor(setting: string, detail: string, fix: string) {
    super(`the records (stream CATALOGUE) are not safe to serve on: ${setting} ${detail} (R47); ${fix}`);
    this.setting = setting;
  }
}

export type { BehindEvidence };

/**
 * The records are behind what the world has seen (R43): they were restored from a backup or lost
 * their tail. `evidence` says what shows it. Nothing is appended or sent over such records until
 * an operator runs `mesh replay` and accepts the restore (`mesh replay --accept-restore`, R44).
 */
export class RecordsBehind extends Error {
  override readonly name = "RecordsBehind";
  readonly evidence: BehindEvidence[];
  constructor(evidence: readonly BehindEvidence[]) {
    super(`the records are behind what the world has seen (restored from a backup, or their tail was lost): ${evidence.map((e) => e.detail).join("; ")}; run \`mesh replay\`, then \`mesh replay --accept-restore\` (R43, R44)`);
    this.evidence = [...evidence];
  }
}

/**
 * A read of the records could not go on (R58): the bus stayed unreachable, or handed over nothing,
 * for longer than the read's stall limit, or the connection was closed for good. `sequence` is the
 * first sequence not handed over; every commit before it was handed over once, in order. `cause`
 * says what the read last saw (a disconnect, missed heartbeats, a refused consumer).
 */
export class ReadInterrupted extends Error {
  override readonly name = "ReadInterrupted";
  readonly sequence: number;
  constructor(sequence: number, reason: string, options?: { cause?: unknown }) {
    super(`the read of the records stopped before sequence ${sequence}: ${reason}`, options);
    this.sequence = sequence;
  }
}

/**
 * A read of a snapshot's body could not go on (R61): nothing arrived for the read's stall limit, or
 * the connection closed under it. `cause` is the bus's own error for that (a TimeoutError, a
 * ClosedConnectionError), so a start that meets it stands by and starts again (startsAgainAfter).
 */
export class SnapshotReadStopped extends Error {
  override readonly name = "SnapshotReadStopped";
  constructor(object: string, reason: string, options?: { cause?: unknown }) {
    super(`the read of snapshot ${object} stopped: ${reason}`, options);
  }
}
