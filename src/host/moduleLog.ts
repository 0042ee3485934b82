import { closeSync, constants, existsSync, fstatSync, lstatSync, mkdirSync, openSync, readSync, rmSync, writeSync } from "node:fs";
import { dirname, join } from "node:path";
import { renameDurable } from "../files/index.ts";
import { tailOf } from "./runPlan.ts";

/**
 * A module's output file (R72): `<stateDir>/logs/<module>.log` (moduleLogFile), rotated when it
 * passes MODULE_LOG_BYTES (to `<module>.log.1`, the one before to `.2`), so a module that floods
 * its output fills at most three times that on the node's disk. Outside `modules/`, the mesh's
 * own folders: a log is never a file the host "found" there (R29), and it outlives an unassign.
 */

/** The folder of the modules' logs under the state folder. */
export const MODULE_LOGS_FOLDER = "logs";

/** The output file of `module` (a mesh name, checked by the caller) under `stateDir`. */
export function moduleLogFile(stateDir: string, module: string): string {
  return join(stateDir, MODULE_LOGS_FOLDER, `${module}.log`);
}
/** A module's log is rotated past this many bytes. */
export const MODULE_LOG_BYTES = 1024 * 1024;
/** Rotated logs kept beside the current one. */
export const MODULE_LOGS_KEPT = 2;
/** The most bytes one `logs` answer carries. */
export const LOGS_REPLY_MAX_BYTES = 256 * 1024;

/** The log writer of one module: append, and close. Never throws (a full disk loses lines, not the agent). */
export type ModuleLog = { write(chunk: Buffer | string): void; close(): void };

/** Opens `path` (moduleLogFile) for appending, rotated at `maxBytes`. */
export function openModuleLog(path: string, maxBytes = MODULE_LOG_BYTES): ModuleLog {
  let fd: number | undefined;
  let size = 0;
  const open = () => {
    try {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      // Appended to only as itself: the agent never writes through a link into another file.
      fd = openSync(path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
      size = fstatSync(fd).size;
    } catch {
      fd = undefined;
    }
  };
  const rotate = () => {
    if (fd !== undefined) closeSync(fd);
    fd = undefined;
    try {
      rmSync(`${path}.${MODULE_LOGS_KEPT}`, { force: true });
      for (let n = MODULE_LOGS_KEPT - 1; n >= 1; n--) if (existsSync(`${path}.${n}`)) renameDurable(`${path}.${n}`, `${path}.${n + 1}`);
      renameDurable(path, `${path}.1`);
    } catch {
      // A rotation that failed leaves the file as it is; the next write tries again.
    }
    open();
  };
  open();
  return {
    write(chunk) {
      try {
        if (fd === undefined) open();
        if (fd === undefined) return;
        size += writeSync(fd, typeof chunk === "string" ? Buffer.from(chunk) : chunk);
        if (size >= maxBytes) rotate();
      } catch {
        // R76: lines are dropped before anything dies for them.
      }
    },
    close() {
      if (fd !== undefined) closeSync(fd);
      fd = undefined;
    },
  };
}

/** What one `logs` question answers: the tail asked, and the current file's size (where a follower asks from next). */
export type LogTail = { text: string; truncated: boolean; size: number };

/**
 * The newest `lines` lines of a module's output (at most `maxBytes`), or, with `from` (a byte
 * offset of the current file a follower got as `size`), what was written since; a `from` past the
 * file's end (it was rotated) reads it from its start. Reads at most the current and the first
 * rotated file.
 */
export function readModuleLog(path: string, lines: number, maxBytes = LOGS_REPLY_MAX_BYTES, from?: number): LogTail {
  const size = sizeOf(path);
  const bound = Math.min(maxBytes, LOGS_REPLY_MAX_BYTES);
  if (from !== undefined) {
    const start = from > size ? 0 : from;
    const cut = tailOf(readRange(path, start, size), Number.MAX_SAFE_INTEGER, bound);
    return { text: cut.text, truncated: cut.truncated, size };
  }
  const older = `${path}.1`;
  const olderSize = size < bound ? sizeOf(older) : 0;
  const olderStart = Math.max(0, olderSize - (bound - size));
  const text = readRange(older, olderStart, olderSize) + readRange(path, Math.max(0, size - bound), size);
  const cut = tailOf(text, lines, bound);
  // Lines were left off when the files hold more than was read.
  return { text: cut.text, truncated: cut.truncated || size > bound || olderStart > 0, size };
}

/** A file's size, 0 when it is not there. */
function sizeOf(path: string): number {
  try {
    const stat = lstatSync(path);
    return stat.isFile() ? stat.size : 0;
  } catch {
    return 0;
  }
}

/** Bytes start..end of a file as UTF-8 text ("" when it is gone). */
function readRange(path: string, start: number, end: number): string {
  if (end <= start) return "";
  let fd: number | undefined;
  try {
    // Never through a link: a link put in the logs folder must not serve another file.
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
    const buffer = Buffer.alloc(end - start);
    return buffer.subarray(0, readSync(fd, buffer, 0, buffer.length, start)).toString("utf8");
  } catch {
    return "";
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Whether `path` is a log file itself (a regular file, not a link to one). */
export function isLogFile(path: string): boolean {
  try {
    return lstatSync(path).isFile();
  } catch {
    return false;
  }
}
