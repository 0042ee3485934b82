import { fstatSync, writeSync } from "node:fs";

/**
 * The controller's log: one line per event, `<ISO time> <level> <message>`, written to a stream.
 * Callers never pass a password, a hash's source, or a URL with credentials (R3); the address
 * alone names the bus.
 *
 * A log never ends its process (R76): a line the stream refuses (ENOSPC: the disk under the log is
 * full) is dropped and counted, and the next line that goes out is preceded by how many were
 * dropped and why. A process of `mesh up` says why it stopped in its exit record instead
 * (src/up/exitRecord.ts), which needs no new space.
 */
export type ControllerLog = { info(line: string): void; error(line: string): void };

/** Somewhere lines are written: a stream, or a file descriptor (standardOut). */
export type LineOut = { write(text: string): unknown; on?(event: "error", listener: (error: Error) => void): unknown };

/**
 * `write` made total (R76): what it throws drops that text, counted; the next text that goes out
 * is preceded by one line saying how many were dropped and the error's code. Never throws.
 */
export function droppingWriter(write: (text: string) => unknown): (text: string) => void {
  let dropped = 0;
  let why = "";
  return (text) => {
    try {
      if (dropped > 0) {
        // After a newline of its own: the last line before the drops may have been cut off.
        write(`\n${new Date().toISOString()} ${dropped} log line${dropped === 1 ? "" : "s"} dropped (${why}) before this one\n`);
        dropped = 0;
      }
      write(text);
    } catch (error) {
      dropped += 1;
      why = (error as NodeJS.ErrnoException).code ?? (error instanceof Error ? error.message : String(error));
    }
  };
}

/**
 * The process's stdout (1) or stderr (2) as a LineOut that never ends the process (R76). A regular
 * file (`mesh up` sends each process's output to one) is written directly, so a refused write
 * throws where droppingWriter counts it and the next write is tried again; node's own stream
 * would emit the error, end the process when nobody listens, and stay broken after space returns.
 * Anything else (a terminal, a pipe, the journal) goes through the stream, whose errors are heard
 * and dropped.
 */
export function standardOut(fd: 1 | 2): LineOut {
  const stream = fd === 1 ? process.stdout : process.stderr;
  stream.on("error", () => undefined);
  let file = false;
  try {
    file = fstatSync(fd).isFile();
  } catch {
    file = false;
  }
  return file ? { write: (text: string) => writeSync(fd, text) } : stream;
}

/** A log writing one line per event to `out` (stderr by default); it never throws nor ends the process for a line (R76). */
export function lineLog(out: LineOut = standardOut(2), clock: () => Date = () => new Date()): ControllerLog {
  // Node's stream emits a failed write as an error: heard here, so it cannot end the process.
  if (out === process.stderr || out === process.stdout) out = standardOut(out === process.stdout ? 1 : 2);
  else out.on?.("error", () => undefined);
  const emit = droppingWriter((text) => out.write(text));
  const write = (level: string, line: string) => {
    emit(`${clock().toISOString()} ${level} ${line.replace(/\n/g, " ")}\n`);
  };
  return { info: (line) => write("info", line), error: (line) => write("error", line) };
}

/**
 * The log of a process `mesh up` leaves running (src/up/daemonProcess.ts): `<ISO time> <line>` on stdout,
 * which `mesh up` sends to `<dir>/logs/<name>.log`; stderr is guarded too. Never throws (R76).
 */
export function processLog(): (line: string) => void {
  standardOut(2);
  const out = standardOut(1);
  const emit = droppingWriter((text) => out.write(text));
  return (line) => emit(`${new Date().toISOString()} ${line.replace(/\n/g, " ")}\n`);
}

/** A log that keeps its lines in memory (tests search them for secrets). */
export function memoryLog(): ControllerLog & { lines: string[] } {
  const lines: string[] = [];
  return { lines, info: (line) => { lines.push(`info ${line}`); }, error: (line) => { lines.push(`error ${line}`); } };
}
