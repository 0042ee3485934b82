/**
 * R61: a controller that holds the lease but cannot start serving gives the lease up instead of
 * holding it idle. Seen on a 2.9.10 cluster: a standby took the lease after a reload had dropped
 * the active one, and its start (snapshot, catch-up, raise) got no JetStream answers for minutes
 * while it renewed the lease, so no controller served. The start is watched: with no serving
 * after START_REDIAL_MS it dials the bus again (a fresh connection was answered where the old
 * one was not), and after START_BOUND_MS it gives up: the lease is released and the start throws
 * StartStalled, after which its process stands by again.
 */
import { transientBusConditionOf } from "../bus/errors.ts";

/** Milliseconds a start may go without serving before it dials the bus again. */
export const START_REDIAL_MS = 15_000;
/** Milliseconds a start may go without serving before it releases the lease and throws StartStalled. */
export const START_BOUND_MS = 60_000;

/** The start held the lease and did not serve within `boundMs`: it released the lease (R61). */
export class StartStalled extends Error {
  override readonly name = "StartStalled";
  readonly boundMs: number;
  constructor(boundMs: number) {
    super(`held the controllers' lease but did not start serving within ${boundMs} ms: the lease is released (R61)`);
    this.boundMs = boundMs;
  }
}

/** What a start watch does when its times pass, and the timer it uses (a test's fake timers). */
export type StartWatchOptions = {
  redialAfterMs?: number;
  boundMs?: number;
  /** Called once, `redialAfterMs` after the watch began, unless the start served first. */
  redial: (why: string) => void;
  /** Called once, `boundMs` after the watch began, unless the start served first. */
  giveUp: (stalled: StartStalled) => void;
  setTimer?: (run: () => void, ms: number) => { cancel(): void };
};

/**
 * Watches a start from the moment it holds the lease (R61): returns `served`, to call once the
 * start serves (or failed on its own); it cancels both timers. Never throws.
 */
export function watchStart(options: StartWatchOptions): { served(): void } {
  const redialAfterMs = options.redialAfterMs ?? START_REDIAL_MS;
  const boundMs = options.boundMs ?? START_BOUND_MS;
  const setTimer = options.setTimer ?? ((run, ms) => {
    const timer = setTimeout(run, ms);
    timer.unref();
    return { cancel: () => clearTimeout(timer) };
  });
  const timers = [
    setTimer(() => options.redial(`the start has not served for ${redialAfterMs} ms`), redialAfterMs),
    setTimer(() => options.giveUp(new StartStalled(boundMs)), boundMs),
  ];
  return { served: () => { for (const timer of timers) timer.cancel(); } };
}

/** Milliseconds a controller's process waits before it stands by again after a start that failed (startsAgainAfter). */
export const START_AGAIN_PAUSE_MS = 1_000;

/**
 * Whether a controller's process whose start failed with `error` stands by again (R61, R62)
 * rather than ending: the start stalled holding the lease (StartStalled), or a passing bus
 * condition failed it (transientBusConditionOf: a timeout, no responders, a leader election, a
 * connection lost; seen on a 2.9.10 cluster restarted with its controller, whose reads timed out
 * after the lease was taken). The failed start released the lease and closed its connection
 * already. Anything else (bad configuration, records that erase commits) ends it. Pure.
 */
export function startsAgainAfter(error: unknown): boolean {
  return error instanceof StartStalled || transientBusConditionOf(error) !== undefined;
}
