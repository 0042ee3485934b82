/**
 * The records' high-water mark, kept outside them in the controller's own state folder (R43):
 * the last sequence the controller folded and the CATALOGUE stream's creation time. A restored
 * backup or a lost tail leaves the records behind it, which the controller then refuses to serve
 * on (records-behind) instead of appending over lost sequence numbers.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { writeFileDurable } from "../files/index.ts";
import type { RecordsMark } from "../records/catalogue.ts";

/** The mark's file name in the controller's state folder. */
export const RECORDS_MARK_FILE = "records-mark.json";

const Mark = z.object({ lastSequence: z.number().int().min(0), streamCreated: z.string().min(1) }).strict();

/** The mark's path in `stateDir`. */
export function recordsMarkPath(stateDir: string): string {
  return join(stateDir, RECORDS_MARK_FILE);
}

/**
 * Reads the mark from `stateDir`; null when none was kept yet (a first start). Throws an Error
 * naming the file when it is there but unreadable or malformed: a mark that cannot be read is
 * not silently taken for none.
 */
export function readRecordsMark(stateDir: string): RecordsMark | null {
  const path = recordsMarkPath(stateDir);
  if (!existsSync(path)) return null;
  const parsed = Mark.safeParse(JSON.parse(readFileSync(path, "utf8")));
  if (!parsed.success) throw new Error(`${path}: not a records mark (${parsed.error.issues[0]?.message ?? "malformed"}): restore it or remove it after \`mesh replay\``);
  return parsed.data;
}

/** Writes the mark to `stateDir` durably (R54: temporary file, fsync, rename, fsync the folder), 0600. */
export function writeRecordsMark(stateDir: string, mark: RecordsMark): void {
  writeFileDurable(recordsMarkPath(stateDir), `${JSON.stringify(mark)}\n`, { mode: 0o600 });
}
