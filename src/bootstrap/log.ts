/**
 * The controller's log: one line per event, `<ISO time> <level> <message>`, written to a stream.
 * Callers never pass a password, a hash's source, or a URL with credentials (R3); the address
 * alone names the bus.
 */
export type ControllerLog = { info(line: string): void; error(line: string): void };

/** A log writing one line per event to `out` (process.stderr by default). */
export function lineLog(out: { write(text: string): unknown } = process.stderr, clock: () => Date = () => new Date()): ControllerLog {
  const write = (level: string, line: string) => {
    out.write(`${clock().toISOString()} ${level} ${line.replace(/\n/g, " ")}\n`);
  };
  return { info: (line) => write("info", line), error: (line) => write("error", line) };
}

/** A log that keeps its lines in memory (tests search them for secrets). */
export function memoryLog(): ControllerLog & { lines: string[] } {
  const lines: string[] = [];
  return { lines, info: (line) => { lines.push(`info ${line}`); }, error: (line) => { lines.push(`error ${line}`); } };
}
