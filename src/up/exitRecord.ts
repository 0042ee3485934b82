import { closeSync, existsSync, fsyncSync, ftruncateSync, openSync, readFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { writeFileDurable } from "../files/index.ts";

/**
 * Why a process of `mesh up` stopped, in a place that survives a full disk (R76): its exit record,
 * `<dir>/run/<name>.exit`, made EXIT_RECORD_BYTES long (blanks) when the process is started, so
 * that writing the reason over it later takes no new space. Its log is no such place: on a full
 * disk its last line is whatever was written before the space ran out ("reconnected"), which
 * `mesh status` used to give as the reason. A record of blanks is a process that has not stopped.
 */

/** The room reserved for a reason: one line, cut to fit. */
export const EXIT_RECORD_BYTES = 4096;

/** `<dir>/run/<name>.exit`: where process `name` of `mesh up` in `dir` says why it stopped. */
export function exitRecordFile(dir: string, name: string): string {
  return join(dir, "run", `${name}.exit`);
}

/** Makes `file` EXIT_RECORD_BYTES of blanks, durably (R54), before the process starts. Throws the file system's error. */
export function reserveExitRecord(file: string): void {
  writeFileDurable(file, `${" ".repeat(EXIT_RECORD_BYTES - 1)}\n`, { mode: 0o644 });
}

/**
 * Writes `<ISO time> <reason>` over the reserved record `file` (cut to fit it) and fsyncs it; with
 * no record reserved, a new file is tried. Returns whether the reason is on disk; never throws (a
 * process on its way out has nobody left to tell).
 */
export function recordExit(file: string, reason: string, now: Date = new Date()): boolean {
  const text = Buffer.from(`${now.toISOString()} ${reason.replace(/\n/g, " ")}`, "utf8").subarray(0, EXIT_RECORD_BYTES - 1);
  const line = Buffer.concat([text, Buffer.from("\n")]);
  let fd: number | undefined;
  try {
    fd = openSync(file, existsSync(file) ? "r+" : "w", 0o644);
    let written = 0;
    while (written < line.length) written += writeSync(fd, line, written, line.length - written, written);
    ftruncateSync(fd, line.length);
    fsyncSync(fd);
    return true;
  } catch {
    return false;
  } finally {
    if (fd !== undefined) try { closeSync(fd); } catch { /* the write's outcome is what counts */ }
  }
}

/** The reason recorded in `file` (without its time stamp), or undefined when there is none (no file, or blanks: not stopped). */
export function readExitRecord(file: string): string | undefined {
  if (!existsSync(file)) return undefined;
  const text = readFileSync(file, "utf8").trim();
  return text === "" ? undefined : text.replace(/^\d{4}-\d\d-\d\dT\S+Z /, "");
}
