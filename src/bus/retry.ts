/**
 * The one bounded retry policy for JetStream API calls that fail for a moment (issue 13): a bus
 * under load or reloading its configuration answers an admin request with no responders
 * (the JetStream API has no subscriber for an instant), "jetstream is not enabled" (503, or the client's
 * JetStreamNotEnabled made of a no-responders), or nothing within the timeout. Such a call is
 * tried again after a short, growing pause, a bounded number of times; any other error (a
 * configuration the server refuses, a stream not found) passes through at once. And the one poll
 * loop, pollUntil: ask until something is the case, every so often, up to a deadline.
 */
import { transientBusConditionOf } from "./errors.ts";

/** Pauses between attempts, in milliseconds: five retries over ~3 s in all. */
export const JETSTREAM_RETRY_DELAYS_MS: readonly number[] = [100, 250, 500, 1_000, 1_500];

/**
 * The JetStream API stayed unavailable through every attempt of retryJetStream. `operation` names
 * what was tried (one line, no credentials), `attempts` how often; `cause` is the last error.
 */
export class JetStreamUnavailable extends Error {
  override readonly name = "JetStreamUnavailable";
  readonly operation: string;
  readonly attempts: number;
  constructor(operation: string, attempts: number, options?: { cause?: unknown }) {
    const last = options?.cause instanceof Error ? `: ${options.cause.message.split("\n")[0]}` : "";
    super(`${operation}: the JetStream API did not answer after ${attempts} attempts${last}`, options);
    this.operation = operation;
    this.attempts = attempts;
  }
}

/**
 * True when `error` (or an error in its `cause` chain) is a momentary JetStream unavailability:
 * no responders, a timeout, JetStreamNotEnabled, or an API error with status 503 or a code that
 * says "not now" (transientBusConditionOf, src/bus/errors.ts: the one list). A connection closed
 * under the call is not retried here (a new connection is the caller's), nor is a configuration
 * refusal (4xx) or any other error. Pure.
 */
export function isTransientJetStreamError(error: unknown): boolean {
  const kind = transientBusConditionOf(error)?.kind;
  return kind !== undefined && kind !== "connection-lost";
}

/**
 * Pauses of a start waiting for JetStream to answer (retryJetStream's delaysMs): a cluster whose
 * servers all just started elects its metadata leader, then each stream's, for seconds; a
 * controller started with them waits up to about a minute, asking every second at most.
 */
export const BUS_READY_DELAYS_MS: readonly number[] = [250, 500, ...Array.from({ length: 60 }, () => 1_000)];

/** Transient JetStream failures in a row on one connection after which a client dials the bus again. */
export const DIAL_AGAIN_AFTER = 3;

/**
 * R62: whether the `failuresInARow`th transient JetStream failure in a row on one connection (1 is
 * the first) is one after which the client dials the bus again: every DIAL_AGAIN_AFTER-th. Seen on
 * 2.9.10 clusters: a connection got no JetStream answers (timeouts, or "no responders" where the
 * server had lost the interest of a stream's new leader on another server) while core messages
 * flowed, and a fresh connection, to the next server, was answered. Pure.
 */
export function dialAgainAfter(failuresInARow: number): boolean {
  return failuresInARow > 0 && failuresInARow % DIAL_AGAIN_AFTER === 0;
}

/** Caller settings of retryJetStream: the pauses (their count is the number of retries) and how to sleep. */
export type RetryJetStreamOptions = {
  delaysMs?: readonly number[];
  sleep?: (ms: number) => Promise<void>;
  /** Told of each transient failure before its pause (for the log). */
  onRetry?: (attempt: number, error: unknown) => void;
};

/**
 * Runs `attempt`; when it fails with a transient JetStream error (isTransientJetStreamError), waits
 * the next pause of `delaysMs` (default JETSTREAM_RETRY_DELAYS_MS) and runs it again. `attempt`
 * must be safe to run again (an assert-style raise, a purge, a read). Returns its result. Throws
 * JetStreamUnavailable naming `operation` (cause: the last error) when every attempt failed
 * transiently; any other error is thrown as it is, at once.
 */
export async function retryJetStream<T>(operation: string, attempt: () => Promise<T>, options: RetryJetStreamOptions = {}): Promise<T> {
  const delays = options.delaysMs ?? JETSTREAM_RETRY_DELAYS_MS;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  for (let tried = 0; ; tried += 1) {
    try {
      return await attempt();
    } catch (error) {
      if (!isTransientJetStreamError(error)) throw error;
      if (tried >= delays.length) throw new JetStreamUnavailable(operation, tried + 1, { cause: error });
      options.onRetry?.(tried + 1, error);
      await sleep(delays[tried]!);
    }
  }
}

/**
 * Pauses of a request answered "no responders" sent again (R77): about 5 s in all, the first few
 * shorter, none over 250 ms (a standby that starts serving is found within a quarter second).
 * Nobody received such a request, so sending it again is safe; during a failover the standby's
 * serving interest appears (or crosses the cluster's routes) within that time.
 */
export const NO_RESPONDERS_DELAYS_MS: readonly number[] = [25, 50, 100, 200, ...Array.from({ length: 19 }, () => 250)];

/** Caller settings of retryNoResponders. */
export type RetryNoRespondersOptions = {
  /** The pauses (their count is the number of retries); default NO_RESPONDERS_DELAYS_MS. */
  delaysMs?: readonly number[];
  /** Milliseconds after which no further attempt starts (a request's own timeout). */
  withinMs?: number;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
};

/**
 * Runs `attempt` (one request); while it fails with "no responders" (transientBusConditionOf kind
 * `no-responders`: nobody received it), waits the next pause and runs it again (R77). Any other
 * outcome is returned or thrown at once; when the pauses are spent, or the next would end past
 * `withinMs`, the last no-responders error is thrown as it is.
 */
export async function retryNoResponders<T>(attempt: () => Promise<T>, options: RetryNoRespondersOptions = {}): Promise<T> {
  const delays = options.delaysMs ?? NO_RESPONDERS_DELAYS_MS;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const now = options.now ?? Date.now;
  const deadline = now() + (options.withinMs ?? Number.POSITIVE_INFINITY);
  for (let tried = 0; ; tried += 1) {
    try {
      return await attempt();
    } catch (error) {
      if (transientBusConditionOf(error)?.kind !== "no-responders") throw error;
      const pause = delays[tried];
      if (pause === undefined || now() + pause >= deadline) throw error;
      await sleep(pause);
    }
  }
}

/**
 * A poll of pollUntil that ran out of time: `what` was not the case within `timeoutMs`; `attempts`
 * says how often it was asked, `cause` holds the error of the last attempt when it threw.
 */
export class PollTimeout extends Error {
  override readonly name = "PollTimeout";
  readonly what: string;
  readonly timeoutMs: number;
  readonly attempts: number;
  constructor(what: string, timeoutMs: number, attempts: number, options?: { cause?: unknown }) {
    const last = options?.cause instanceof Error ? ` (last: ${options.cause.message.split("\n")[0]})` : "";
    super(`${what}: not within ${timeoutMs} ms${last}`, options);
    this.what = what;
    this.timeoutMs = timeoutMs;
    this.attempts = attempts;
  }
}

/** Settings of pollUntil. */
export type PollOptions = {
  /** Milliseconds between attempts (the last pause is cut short at the deadline). */
  everyMs: number;
  /** Milliseconds to keep asking (default: no end). */
  timeoutMs?: number;
  /** What is waited for, one line for PollTimeout's message ("the controller answers"). */
  what: string;
  /** How to pause (tests pass a fake). */
  sleep?: (ms: number) => Promise<void>;
  /** The clock in milliseconds (tests pass a fake). */
  now?: () => number;
};

/**
 * The one poll loop (issue 12): runs `attempt` until it returns a value other than undefined and
 * returns that value. An attempt that returns undefined or throws is "not yet": pollUntil pauses
 * `everyMs` and asks again. Once `timeoutMs` has passed after an unsuccessful attempt it throws
 * PollTimeout naming `what` (cause: the last attempt's error, if it threw). At least one attempt
 * is always made. For momentary JetStream failures of a call that should succeed, use
 * retryJetStream instead (bounded, and other errors pass through at once).
 */
export async function pollUntil<T>(attempt: () => Promise<T | undefined>, options: PollOptions): Promise<T> {
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const timeoutMs = options.timeoutMs ?? Number.POSITIVE_INFINITY;
  const deadline = now() + timeoutMs;
  for (let attempts = 1; ; attempts += 1) {
    let last: unknown;
    try {
      const value = await attempt();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    const left = deadline - now();
    if (left <= 0) throw new PollTimeout(options.what, timeoutMs, attempts, last === undefined ? undefined : { cause: last });
    await sleep(Math.max(1, Math.min(options.everyMs, left)));
  }
}
