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
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { appendFileDurable, writeFileDurable } from "../files/index.ts";
import type { RecordsMark } from "../records/catalogue.ts";

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

/**
 * Writes `mark` to `stateDir` durably (R54): one line appended and fsynced, or the log replaced
 * by that line once it is past MARK_LOG_BYTES; 0600. On disk when this returns. Throws the file
 * system's error.
 */
export function writeRecordsMark(stateDir: string, mark: RecordsMark): void {
  const path = recordsMarkPath(stateDir);
  // A newline first: a line appended after a torn one starts a line of its own.
  const line = `\n${JSON.stringify(mark)}\n`;
  const size = statSync(path, { throwIfNoEntry: false })?.size ?? 0;
  if (size + line.length > MARK_LOG_BYTES) writeFileDurable(path, line, { mode: 0o600 });
  else appendFileDurable(path, line, { mode: 0o600 });
}

/**
 * The catalogue's options that keep the mark in `stateDir` (R43): the mark as it is now
 * (readRecordsMark, which throws on an unreadable one), and every advance of the fold written
 * (writeRecordsMark). As the controller opens its records, and as the command bench does.
 */
export function keptMark(stateDir: string): { mark: RecordsMark | null; onAdvance: (mark: RecordsMark) => void } {
  return { mark: readRecordsMark(stateDir), onAdvance: (mark) => writeRecordsMark(stateDir, mark) };
}
