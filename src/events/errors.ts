/**
 * The few typed errors of the records adapter (STYLE.md 3): each has a `name` and a `cause`,
 * and is mapped to a reply code in one place by whoever serves commands.
 */

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
 * `cause` is the zod (or JSON) error. A fold that meets one stops: it is never skipped.
 */
export class InvalidEvent extends Error {
  override readonly name = "InvalidEvent";
  readonly sequence: number;
  constructor(sequence: number, options?: { cause?: unknown }) {
    const where = sequence === 0 ? "a commit about to be written" : `the records at sequence ${sequence}`;
    const detail = options?.cause instanceof Error ? `: ${options.cause.message.slice(0, 500)}` : "";
    super(`invalid event in ${where}${detail}`, options);
    this.sequence = sequence;
  }
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
