import * as nodeFs from "node:fs";
import { randomBytes } from "node:crypto";
import { basename, dirname, join } from "node:path";

/**
 * Files that must survive a power cut (R54): credentials, the user list and its last good copy, a
 * host's owned state and the files it applies, the mesh key. Every such write in the project goes
 * through this module, so that each one takes the same steps:
 *
 * 1. a temporary file in the target's own folder (a rename is atomic only inside one file system),
 *    created exclusively with the final mode (0600 for a secret: never readable by others, not
 *    even for the moment between creation and a chmod);
 * 2. the bytes written, then the file fsynced (its data is on disk before its name is);
 * 3. renamed over the target (readers see the old file or the new one, never a part);
 * 4. the folder fsynced (the rename itself is on disk: without it, after a power cut the new user
 *    list can be there while the node's new key is not).
 *
 * On any failure before the rename the temporary file is removed and the target is untouched.
 * The file system calls come through a `DurableFs` adapter (node:fs by default) so a test can
 * watch the order of calls and make one fail.
 */

/** The node:fs calls this module makes (synchronous; a test passes a spying or failing copy). */
export type DurableFs = Pick<
  typeof nodeFs,
  "openSync" | "writeSync" | "fsyncSync" | "fchmodSync" | "closeSync" | "renameSync" | "unlinkSync" | "mkdirSync" | "existsSync" | "linkSync"
>;

/** Caller settings of writeFileDurable. */
export type DurableWriteOptions = {
  /** The file's mode, set when the temporary file is created (default 0600: a secret). */
  mode?: number;
  /** The file system (default node:fs). */
  fs?: DurableFs;
};

/** Mode of files holding secrets or state only their owner reads (R3, R54). */
export const PRIVATE_FILE_MODE = 0o600;
/** Mode of a folder holding such files. */
export const PRIVATE_FOLDER_MODE = 0o700;

/** The temporary name beside `path`: hidden, unique per process and call, so writers never share one. */
function temporaryBeside(path: string): string {
  return join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
}

/** fsyncs the folder `dir` (makes a rename, creation or removal inside it durable). */
export function syncFolder(dir: string, fs: DurableFs = nodeFs): void {
  const fd = fs.openSync(dir, "r");
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Writes `data` (a string as UTF-8, or bytes) to `path` atomically and durably (R54; the steps in
 * the module comment), the file's mode `options.mode` (default 0600) from its creation on. The
 * folder must exist. Throws the file system's error (ENOENT, EACCES, ENOSPC, ...) with `path`
 * untouched and no temporary file left behind.
 */
export function writeFileDurable(path: string, data: string | Uint8Array, options: DurableWriteOptions = {}): void {
  const fs = options.fs ?? nodeFs;
  const mode = options.mode ?? PRIVATE_FILE_MODE;
  const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data;
  const temporary = temporaryBeside(path);
  let fd: number | undefined = fs.openSync(temporary, "wx", mode);
  let renamed = false;
  try {
    // The umask may have taken bits away from `mode` at creation (never added any): set it exactly.
    fs.fchmodSync(fd, mode);
    let written = 0;
    while (written < bytes.length) written += fs.writeSync(fd, bytes, written, bytes.length - written);
    fs.fsyncSync(fd);
    fs.closeSync(fd);
    fd = undefined;
    fs.renameSync(temporary, path);
    renamed = true;
  } finally {
    if (!renamed) {
      if (fd !== undefined) {
        try { fs.closeSync(fd); } catch { /* the write's own error is the one to report */ }
      }
      try { fs.unlinkSync(temporary); } catch { /* already gone */ }
    }
  }
  syncFolder(dirname(path), fs);
}

/**
 * Appends `data` to `path` durably (R54): written at the file's end, then the file fsynced, so
 * the bytes are on disk when this returns. A file that does not exist yet is created by
 * writeFileDurable (its name made durable too, mode `options.mode`, default 0600). A power cut
 * during an append can leave part of `data` at the end, never less of what was there: a reader
 * of an append-only file tells a torn last append by its form (a line without its newline). For
 * a file that grows by small records read back as their last one: one fsync each, where a
 * replacement costs two and a rename. Throws the file system's error.
 */
export function appendFileDurable(path: string, data: string | Uint8Array, options: DurableWriteOptions = {}): void {
  const fs = options.fs ?? nodeFs;
  if (!fs.existsSync(path)) {
    writeFileDurable(path, data, options);
    return;
  }
  const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data;
  const fd = fs.openSync(path, "a");
  try {
    let written = 0;
    while (written < bytes.length) written += fs.writeSync(fd, bytes, written, bytes.length - written);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Renames `from` over `to` (same file system) and fsyncs the folders involved (R54): for a whole
 * folder built beside its final place (genesis) or a file already written durably elsewhere.
 * Throws the file system's error.
 */
export function renameDurable(from: string, to: string, fs: DurableFs = nodeFs): void {
  fs.renameSync(from, to);
  syncFolder(dirname(to), fs);
  if (dirname(from) !== dirname(to)) syncFolder(dirname(from), fs);
}

/**
 * Moves every entry of the folder `from` into the folder `to` (one file system: each rename is
 * atomic), `last` after all the others and an fsync of `to`, so that `last` is there only once
 * everything else is (R54: genesis's mesh.json, the mark of a whole mesh); then removes the
 * emptied `from` and fsyncs `to`. For a folder built inside its final place because that place
 * cannot be renamed (a mount point). Throws the file system's error.
 */
export function moveEntriesDurable(from: string, to: string, last?: string, fs: DurableFs & Pick<typeof nodeFs, "readdirSync" | "rmdirSync"> = nodeFs): void {
  const entries = fs.readdirSync(from);
  for (const entry of entries) if (entry !== last) fs.renameSync(join(from, entry), join(to, entry));
  syncFolder(to, fs);
  if (last !== undefined && entries.includes(last)) fs.renameSync(join(from, last), join(to, last));
  fs.rmdirSync(from);
  syncFolder(to, fs);
}

/**
 * Gives the file `from` a second name `to` (a hard link: no byte is copied or fsynced again),
 * atomically and durably (R54): the link is made under a temporary name beside `to`, renamed over
 * it (readers of `to` see the old file or `from`, never neither), and `to`'s folder fsynced. For a
 * file already written durably (writeFileDurable) that must also be kept under another name (the
 * user list's last good copy). The two names share one file: a later writeFileDurable of either
 * replaces that name's file and leaves the other's alone. Throws the file system's error (EPERM
 * or ENOTSUP where hard links are not supported, EXDEV across file systems) with `to` untouched
 * and no temporary name left behind.
 */
export function linkDurable(from: string, to: string, fs: DurableFs = nodeFs): void {
  const temporary = temporaryBeside(to);
  fs.linkSync(from, temporary);
  try {
    fs.renameSync(temporary, to);
  } catch (error) {
    try { fs.unlinkSync(temporary); } catch { /* the rename's own error is the one to report */ }
    throw error;
  }
  syncFolder(dirname(to), fs);
}

/** Removes the file `path` when it exists and fsyncs its folder (R54). Returns whether it existed. */
export function removeFileDurable(path: string, fs: DurableFs = nodeFs): boolean {
  try {
    fs.unlinkSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw error;
  }
  syncFolder(dirname(path), fs);
  return true;
}

/**
 * Makes the folder `dir` (and missing parents) with `mode` (default 0700) and fsyncs the folder
 * above each one it made, so the new folder's entry survives a power cut like the files written
 * into it (R54). Nothing is done when it exists. Throws the file system's error.
 */
export function makeFolderDurable(dir: string, mode = PRIVATE_FOLDER_MODE, fs: DurableFs = nodeFs): void {
  if (fs.existsSync(dir)) return;
  const first = fs.mkdirSync(dir, { recursive: true, mode });
  if (first === undefined) return;
  // Every folder from `first` down to `dir` is new: each one's parent records its entry.
  let current = dir;
  for (;;) {
    syncFolder(dirname(current), fs);
    if (current === first || dirname(current) === current) break;
    current = dirname(current);
  }
}
