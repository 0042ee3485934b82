/**
 * The records' high-water mark, kept outside them in the controller's own state folder (R43):
 * the last sequence the controller folded and the CATALOGUE stream's creation time. A restored
 * backup or a lost tail leaves the records behind it, which the controller then refuses to serve
 * on (records-behind) instead of appending over lost sequence numbers.
 *
 * The file is a log of JSON lines, one per advance of the fold (and one at each start), and the
 * mark is its last whole line. Every command advances the fold and its reply goes out after its
 * line is on disk, so the write is on every command's path. Replacing the file (R54's temporary
 * file, fsync, rename, folder fsync) made a command's round trip 2.0 ms where it is 0.57 ms
 * without a mark; an append and one fsync (appendFileDurable) make it 1.4 to 1.6 ms (the fsync
 * right after the bus wrote the commit also flushes the bus's writes). A power cut during an
 * append leaves a line without its newline: that append never returned, so no reply went out on
 * it, and the line before it is the mark. Each line is written after a newline of its own, so the
 * line appended after a torn one is whole (the log has empty lines between marks). Past
 * MARK_LOG_BYTES the log is replaced by its last line (writeFileDurable), once in about a thousand
 * advances. A file of one line (as earlier releases wrote it) is a log already.
 *
 * A full disk (R76): a mark that cannot be written after a commit never turns that commit into a
 * failed reply (keptMark). The reply goes out and the newest mark is written again at each advance
 * and every MARK_RETRY_MS until it lands. Why that is safe: a mark behind the records is a lower
 * bound, so it never makes healthy records look restored, and it is written again before anything
 * else depends on it. What it costs while it lags: a restore that loses only the commits after
 * the mark's last line is not seen by the mark itself; the operators' commands and the hosts'
 * reports still carry the highest sequence their senders saw (R68), so such a restore is found when
 * they next speak. A start is different: nothing was answered yet, and a controller that cannot
 * keep its mark refuses to start (MarkUnwritable names the file and the space it needs).
 */
import { closeSync, existsSync, fstatSync, fsyncSync, openSync, readFileSync, statSync, statfsSync, writeSync } from "node:fs";
import { dirname, join } from "node:path";
import { z } from "zod";
import { appendFileDurable, writeFileDurable } from "../files/index.ts";
import type { RecordsMark } from "../records/catalogue.ts";
import type { ControllerLog } from "./log.ts";

/** The mark's file name in the controller's state folder. */
export const RECORDS_MARK_FILE = "records-mark.json";

const Mark = z.object({ lastSequence: z.number().int().min(0), streamCreated: z.string().min(1) }).strict();

/** The mark's path in `stateDir`. */
export function recordsMarkPath(stateDir: string): string {
  return join(stateDir, RECORDS_MARK_FILE);
}

/** The size past which the log is replaced by its last line (bytes; a line is about 60). */
export const MARK_LOG_BYTES = 64 * 1024;

/**
 * The last line of `text` that is not empty and ends with its newline, without it; null when
 * there is none. What follows it is a torn append (see the module comment), never a mark.
 */
export function lastWholeLine(text: string): string | null {
  let end = text.lastIndexOf("\n");
  while (end > 0) {
    const start = text.lastIndexOf("\n", end - 1) + 1;
    if (start < end) return text.slice(start, end);
    end = start - 1;
  }
  return null;
}

/**
 * Reads the mark from `stateDir`: the log's last whole line. Null when no mark was kept yet (a
 * first start). Throws an Error naming the file and the way out (edit or move it aside: no
 * running controller is needed) when it is there but holds no whole line, or its last whole line
 * is not a mark: a mark that cannot be read is not silently taken for none.
 */
export function readRecordsMark(stateDir: string): RecordsMark | null {
  const path = recordsMarkPath(stateDir);
  if (!existsSync(path)) return null;
  const line = lastWholeLine(readFileSync(path, "utf8"));
  let parsed: ReturnType<typeof Mark.safeParse> | null = null;
  try {
    parsed = line === null ? null : Mark.safeParse(JSON.parse(line));
  } catch {
    parsed = null;
  }
  if (parsed === null || !parsed.success) {
    const why = line === null ? "no whole line" : parsed === null ? "its last line is not JSON" : (parsed.error.issues[0]?.message ?? "malformed");
    // Not a torn append (that is skipped): the file was damaged. The way out needs no controller.
    throw new Error(`${path}: not a records mark (${why}): remove its damaged last line and start again, or move the file aside to start with no mark (the hosts' reports are still checked against the records, R43; a restore of the records made while it is gone is not seen by the mark)`);
  }
  return parsed.data;
}

/** How often a mark that could not be written is tried again while no advance comes (R76). */
export const MARK_RETRY_MS = 2_000;

/**
 * The records mark could not be written (R76): `file`, the file system's error as `cause`, and
 * for lack of space (ENOSPC, EDQUOT) the bytes free where it lies (null when unknown) and the
 * bytes the write needs (whole blocks of that file system).
 */
export class MarkUnwritable extends Error {
  override readonly name = "MarkUnwritable";
  readonly file: string;
  readonly freeBytes: number | null;
  readonly neededBytes: number;
  constructor(file: string, cause: unknown, space: { freeBytes: number | null; neededBytes: number }) {
    const code = (cause as NodeJS.ErrnoException).code ?? "error";
    const full = code === "ENOSPC" || code === "EDQUOT";
    const why = full
      ? `its file system has ${space.freeBytes ?? "an unknown number of"} bytes free and the mark needs at least ${space.neededBytes}: free space there`
      : `${cause instanceof Error ? cause.message : String(cause)}: make the folder writable by the controller`;
    super(`the records mark ${file} cannot be written (${code}): ${why} (R43, R76)`, { cause });
    this.file = file;
    this.freeBytes = space.freeBytes;
    this.neededBytes = space.neededBytes;
  }
}

/** The bytes free to this user on the file system of `dir` and its block size; nulls when it cannot be read. */
function spaceOf(dir: string): { freeBytes: number | null; blockBytes: number | null } {
  try {
    const fs = statfsSync(dir);
    return { freeBytes: fs.bavail * fs.bsize, blockBytes: fs.bsize };
  } catch {
    return { freeBytes: null, blockBytes: null };
  }
}

/**
 * Writes `mark` to `stateDir` durably (R54): one line appended and fsynced, or the log replaced
 * by that line once it is past MARK_LOG_BYTES; 0600. On disk when this returns. Throws
 * MarkUnwritable (the file, the space free and needed, the file system's error as its cause).
 */
export function writeRecordsMark(stateDir: string, mark: RecordsMark): void {
  const path = recordsMarkPath(stateDir);
  // A newline first: a line appended after a torn one starts a line of its own.
  const line = markLine(mark);
  try {
    const size = statSync(path, { throwIfNoEntry: false })?.size ?? 0;
    if (size + line.length > MARK_LOG_BYTES) writeFileDurable(path, line, { mode: 0o600 });
    else appendFileDurable(path, line, { mode: 0o600 });
  } catch (error) {
    throw unwritable(path, error, line);
  }
}

/** A mark's line in the log: a newline first, so a line appended after a torn one starts a line of its own. */
function markLine(mark: RecordsMark): string {
  return `\n${JSON.stringify(mark)}\n`;
}

function unwritable(path: string, error: unknown, line: string): MarkUnwritable {
  if (error instanceof MarkUnwritable) return error;
  const { freeBytes, blockBytes } = spaceOf(dirname(path));
  const block = blockBytes ?? 4096;
  return new MarkUnwritable(path, error, { freeBytes, neededBytes: Math.ceil(line.length / block) * block });
}

/**
 * The mark's log kept open for a running controller (keptMark): each mark one write and one fsync
 * of the open file, where writeRecordsMark also stats, opens and closes it (a tenth of a command's
 * round trip). Its size is counted here; past MARK_LOG_BYTES, and whenever the file was removed
 * under it or a write failed, the next mark goes through writeRecordsMark and the log is opened
 * again. Throws MarkUnwritable as writeRecordsMark does.
 */
function openMarkLog(stateDir: string): { write(mark: RecordsMark): void; close(): void } {
  const path = recordsMarkPath(stateDir);
  let fd: number | null = null;
  let size = 0;
  const close = () => {
    if (fd !== null) try { closeSync(fd); } catch { /* closed either way */ }
    fd = null;
  };
  return {
    write(mark) {
      const line = Buffer.from(markLine(mark), "utf8");
      try {
        if (fd !== null && (size + line.length > MARK_LOG_BYTES || fstatSync(fd).nlink === 0)) close();
        if (fd === null) {
          writeRecordsMark(stateDir, mark);
          fd = openSync(path, "a", 0o600);
          size = fstatSync(fd).size;
          return;
        }
        for (let written = 0; written < line.length; ) written += writeSync(fd, line, written, line.length - written);
        fsyncSync(fd);
        size += line.length;
      } catch (error) {
        close();
        throw unwritable(path, error, line.toString("utf8"));
      }
    },
    close,
  };
}

/** The records mark as the controller keeps it (keptMark). */
export type KeptMark = {
  /** The mark as it was at the start (readRecordsMark). */
  mark: RecordsMark | null;
  /** Writes each advance; never throws (R76: see the module comment). */
  onAdvance: (mark: RecordsMark) => void;
  /** Stops trying again a mark not written yet, and closes the log (the controller stops). */
  stop(): void;
};

/**
 * The catalogue's options that keep the mark in `stateDir` (R43): the mark as it is now
 * (readRecordsMark, which throws on an unreadable one), and every advance of the fold written
 * (writeRecordsMark). A write that fails is said once in `log`, and the newest mark is written
 * again at the next advance and every `retryMs` until it lands, which is said too (R76). As the
 * controller opens its records, and as the command bench does.
 */
export function keptMark(stateDir: string, log?: ControllerLog, retryMs = MARK_RETRY_MS): KeptMark {
  let pending: RecordsMark | null = null;
  let timer: NodeJS.Timeout | undefined;
  const markLog = openMarkLog(stateDir);
  const stopRetrying = () => {
    clearInterval(timer);
    timer = undefined;
  };
  const write = (mark: RecordsMark) => {
    try {
      markLog.write(mark);
    } catch (error) {
      if (pending === null) {
        log?.error(`${error instanceof Error ? error.message : String(error)}; replies go out meanwhile, and the mark is written again at each commit and every ${retryMs / 1000} s`);
        timer = setInterval(() => { if (pending !== null) write(pending); }, retryMs);
        timer.unref();
      }
      pending = mark;
      return;
    }
    if (pending !== null) log?.info(`the records mark ${recordsMarkPath(stateDir)} is written again, at sequence ${mark.lastSequence} (R43)`);
    pending = null;
    stopRetrying();
  };
  const stop = () => {
    stopRetrying();
    markLog.close();
  };
  return { mark: readRecordsMark(stateDir), onAdvance: write, stop };
}
