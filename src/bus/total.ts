/**
 * Total message handlers (R65, issues 25 and 26). Every handler of a long-lived subscription goes
 * through `total`: what it throws or rejects with is handed to its `dropped` callback and never
 * reaches the subscription's loop (where it would end the loop, or the process). A message dropped
 * is said in ONE bounded line (boundedText), and the lines are rate-limited per reason (dropLogger):
 * a flood of one kind costs a few lines and then one "dropped K more like this" line per interval.
 * `dropsOf(write)` gives every subscriber of one log the same limiter, so a flood spread over
 * several subscribers is bounded as one.
 */

/** The longest text a drop line quotes from a message (a subject, a verb, an error's first line). */
export const QUOTED_CHARS = 160;

/** The longest drop line, whatever it quotes. */
export const DROP_LINE_CHARS = 400;

/** A line of text on one line, cut to `max` characters (with `...` and the original length when cut). Pure. */
export function boundedText(text: string, max = QUOTED_CHARS): string {
  const flat = text.replace(/[\r\n\t]+/g, " ");
  return flat.length <= max ? flat : `${flat.slice(0, max)}... (${flat.length} chars)`;
}

/** An error as one bounded line: its name and its message's first line. Never throws. Pure. */
export function errorLine(error: unknown): string {
  try {
    const text = error instanceof Error ? `${error.name}: ${String(error.message).split("\n")[0]}` : String(error);
    return boundedText(text);
  } catch {
    return "an error that cannot be described";
  }
}

/** Says that a message was dropped: `reason` is a fixed key of the caller's (never message text), `line` what to write. */
export type DropLog = (reason: string, line: string) => void;

/** Caller settings of dropLogger. */
export type DropLoggerOptions = {
  /** Lines written per reason per interval before the rest are only counted (default 5). */
  perInterval?: number;
  /** The interval, in ms (default 10 s). */
  intervalMs?: number;
  /** The clock (default Date.now). */
  now?: () => number;
};

/** Per reason: when its interval began, the lines written in it, the drops only counted. */
type Window = { start: number; written: number; counted: number };

/**
 * What one drop of a reason writes at `now`, and the reason's window after it (pure): within the
 * first `perInterval` drops of an interval, the drop's own line; past them, nothing (counted);
 * the first drop of a new interval writes, before its own line, the count of the last interval's
 * unwritten drops.
 */
export function nextDrop(window: Window | undefined, reason: string, line: string, now: number, perInterval: number, intervalMs: number): { lines: string[]; window: Window } {
  const lines: string[] = [];
  let current = window ?? { start: now, written: 0, counted: 0 };
  if (now - current.start >= intervalMs) {
    if (current.counted > 0) lines.push(`dropped ${current.counted} more like this (${reason}) in ${Math.round((now - current.start) / 1000)} s (R65)`);
    current = { start: now, written: 0, counted: 0 };
  }
  if (current.written < perInterval) {
    lines.push(boundedText(line, DROP_LINE_CHARS));
    current = { ...current, written: current.written + 1 };
    if (current.written === perInterval) lines.push(`further drops like this (${reason}) are counted, and said once per ${Math.round(intervalMs / 1000)} s (R65)`);
  } else {
    current = { ...current, counted: current.counted + 1 };
  }
  return { lines, window: current };
}

/**
 * A drop log writing to `write` (R65, issue 26): each line bounded (DROP_LINE_CHARS), at most
 * `perInterval` lines per reason per interval, then the count of the rest once the next interval's
 * first drop of that reason comes. Never throws (a `write` that throws loses the line).
 */
export function dropLogger(write: (line: string) => void, options: DropLoggerOptions = {}): DropLog {
  const perInterval = options.perInterval ?? 5;
  const intervalMs = options.intervalMs ?? 10_000;
  const now = options.now ?? Date.now;
  const windows = new Map<string, Window>();
  return (reason, line) => {
    try {
      const next = nextDrop(windows.get(reason), reason, line, now(), perInterval, intervalMs);
      windows.set(reason, next.window);
      for (const text of next.lines) write(text);
    } catch {
      // a drop is never a reason to stop: the line is lost
    }
  };
}

const shared = new WeakMap<object, DropLog>();

/**
 * The one drop log of `log` (a line writer, or a log whose `info` writes): the same limiter for
 * every subscriber writing there, made at first use.
 */
export function dropsOf(log: ((line: string) => void) | { info(line: string): void }): DropLog {
  let found = shared.get(log);
  if (found === undefined) {
    found = dropLogger(typeof log === "function" ? log : (line) => log.info(line));
    shared.set(log, found);
  }
  return found;
}

/**
 * `handler`, made total (R65): the returned function never throws and its promise never rejects;
 * what `handler` throws (or rejects with) goes to `dropped` with the same arguments. A `dropped`
 * that throws is ignored.
 */
export function total<A extends unknown[]>(handler: (...args: A) => unknown, dropped: (error: unknown, ...args: A) => void): (...args: A) => Promise<void> {
  const fail = (error: unknown, args: A) => {
    try {
      dropped(error, ...args);
    } catch {
      // nothing left to tell
    }
  };
  return async (...args: A) => {
    try {
      await handler(...args);
    } catch (error) {
      fail(error, args);
    }
  };
}
