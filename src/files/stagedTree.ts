import {
  closeSync, constants, existsSync, fchmodSync, fstatSync, fsyncSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, readSync,
  renameSync, rmdirSync, rmSync, unlinkSync, writeSync, type Stats,
} from "node:fs";
import { randomBytes } from "node:crypto";
import { dirname, join } from "node:path";
import { PRIVATE_FOLDER_MODE, removeFileDurable, syncFolder, writeFileDurable } from "./durable.ts";

/**
 * The files a host owns, changed all or nothing (R69, R54). The new files are written apart, in a
 * fresh staging folder under the state folder (`.staging-<random>`, made exclusively, each file
 * created exclusively without following a link, fsynced); then a journal (`apply-journal.json`,
 * written durably) names what moves where and what goes: that write is the commit. Then each
 * staged file is renamed into place, the files the tree no longer holds are removed, every folder
 * touched is fsynced, and the journal and staging folder go.
 *
 * A crash before the journal leaves the old tree (and a staging folder, removed at the next start);
 * after it, the next start finishes the journal (finishInterrupted): the new tree. The granularity is
 * the file, not the folder, because files the host found share the mesh's folders and are kept
 * (R29). Every path is looked at with lstat from the state folder down: a link anywhere on it, which
 * the host never makes, is refused (UnsafeTreePath `link`), so nothing is written or removed through one.
 */

/** A path the tree cannot take: one leaving the folder, a link on it, a file or folder in the way. `code` is stable. */
export class UnsafeTreePath extends Error {
  override readonly name = "UnsafeTreePath";
  readonly code: "unsafe-name" | "link" | "not-a-file" | "not-a-folder";
  constructor(code: UnsafeTreePath["code"], message: string) {
    super(message);
    this.code = code;
  }
}

/** A file the tree holds: its text and mode. */
export type TreeFile = { text: string; mode: number };

/** The journal of a committed change, in the state folder while it is carried out. */
export const JOURNAL_FILE = "apply-journal.json";
/** The name a staging folder starts with, in the state folder. */
export const STAGING_PREFIX = ".staging-";

type Journal = { staging: string; write: string[]; remove: string[] };

/** A change staged and not yet committed. */
export type StagedTree = {
  /** Paths (relative, `/`-separated) that are new or changed, as staged. */
  readonly write: readonly string[];
  /** Paths the change removes. */
  readonly remove: readonly string[];
  /** Stages `more` files too (written with the rest), then commits: journal, renames, removals. Throws a file system error. */
  commit(more?: ReadonlyMap<string, TreeFile>): void;
  /** Removes the staging folder when the change was not committed. Idempotent. */
  discard(): void;
};

const refuse = (code: UnsafeTreePath["code"], rel: string, why: string) => new UnsafeTreePath(code, `${rel.slice(0, 120)} ${why}`);

/** The components of a relative path, refused when it could leave the state folder. */
function components(rel: string): string[] {
  const parts = rel.split("/");
  if (rel.startsWith("/") || parts.some((p) => p === "" || p === "." || p === "..")) throw refuse("unsafe-name", rel, "is not a path inside the state folder");
  return parts;
}

function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
}

/**
 * The lstat of `rel`'s entry under `stateDir` (a file or folder path), looked at from the top down
 * without following a link: null when it or a folder above it is absent. Throws UnsafeTreePath
 * `link` for a link on the way or at the end, `not-a-folder` for anything but a folder above it.
 */
function lstatAlong(stateDir: string, rel: string): Stats | null {
  const parts = components(rel);
  for (let i = 1; i <= parts.length; i += 1) {
    const shown = parts.slice(0, i).join("/");
    const stat = lstatOrNull(join(stateDir, ...parts.slice(0, i)));
    if (stat === null) return null;
    if (stat.isSymbolicLink()) throw refuse("link", shown, "is a symbolic link the host did not make: it never writes or removes through one (remove it, or make it a folder, and push again)");
    if (i === parts.length) return stat;
    if (!stat.isDirectory()) throw refuse("not-a-folder", shown, "is not a folder, and the declaration needs one there (move it away and push again)");
  }
  return null;
}

/** The lstat of the regular file `rel` (lstatAlong), null when absent; UnsafeTreePath `not-a-file` when something else is there. */
function inspect(stateDir: string, rel: string): Stats | null {
  const stat = lstatAlong(stateDir, rel);
  if (stat && !stat.isFile()) throw refuse("not-a-file", rel, "is not a regular file, and the declaration writes one there (move it away and push again)");
  return stat;
}

/** Whether the folder `rel` exists (lstatAlong); UnsafeTreePath `not-a-folder` when something else is there. */
function isFolder(stateDir: string, rel: string): boolean {
  const stat = lstatAlong(stateDir, rel);
  if (stat && !stat.isDirectory()) throw refuse("not-a-folder", rel, "is not a folder, and the declaration needs one there (move it away and push again)");
  return stat !== null;
}

/** Whether the regular file at `path` (`stat`) holds `file` already; read without following a link. */
function holds(path: string, stat: Stats, file: TreeFile): boolean {
  if ((stat.mode & 0o777) !== file.mode || stat.size !== Buffer.byteLength(file.text)) return false;
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const bytes = Buffer.alloc(fstatSync(fd).size);
    let read = 0;
    while (read < bytes.length) {
      const n = readSync(fd, bytes, read, bytes.length - read, read);
      if (n === 0) break;
      read += n;
    }
    return bytes.toString("utf8") === file.text;
  } finally {
    closeSync(fd);
  }
}

/** Creates `path` (never there before, never through a link) holding `file`, fsynced. */
function writeNew(path: string, file: TreeFile): void {
  const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, file.mode);
  try {
    fchmodSync(fd, file.mode);
    const bytes = Buffer.from(file.text, "utf8");
    let written = 0;
    while (written < bytes.length) written += writeSync(fd, bytes, written, bytes.length - written);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Writes `files` into the staging folder `root` (folders made as needed), then fsyncs every folder made. */
function writeStaged(root: string, files: ReadonlyMap<string, TreeFile>): void {
  const folders = new Set<string>([root]);
  for (const [rel, file] of files) {
    const path = join(root, ...components(rel));
    if (!folders.has(dirname(path))) {
      mkdirSync(dirname(path), { recursive: true, mode: PRIVATE_FOLDER_MODE });
      for (let dir = dirname(path); dir !== root && !folders.has(dir); dir = dirname(dir)) folders.add(dir);
    }
    writeNew(path, file);
  }
  for (const dir of folders) syncFolder(dir);
}

/**
 * Stages the change from what `stateDir` holds to `files` (relative path → content), removing
 * `remove` (paths the tree held and no longer does): every path is inspected first (a link, a
 * folder where a file goes: UnsafeTreePath, nothing written), files already holding their
 * content are left out, and the rest written to a fresh staging folder. Returns the staged change
 * (commit it, or discard it); nothing outside the staging folder is changed until commit.
 */
export function stageTree(stateDir: string, files: ReadonlyMap<string, TreeFile>, remove: readonly string[]): StagedTree {
  const write = new Map<string, TreeFile>();
  for (const [rel, file] of files) {
    const stat = inspect(stateDir, rel);
    if (stat === null || !holds(join(stateDir, rel), stat, file)) write.set(rel, file);
  }
  const removing = remove.filter((rel) => !files.has(rel) && inspect(stateDir, rel) !== null);
  let staging: string | undefined;
  let committed = false;
  const discard = () => {
    if (staging === undefined || committed) return;
    rmSync(join(stateDir, staging), { recursive: true, force: true });
    staging = undefined;
  };
  if (write.size > 0) {
    staging = `${STAGING_PREFIX}${randomBytes(6).toString("hex")}`;
    mkdirSync(join(stateDir, staging), { mode: PRIVATE_FOLDER_MODE });
    try {
      writeStaged(join(stateDir, staging), write);
    } catch (error) {
      discard();
      throw error;
    }
  }
  return {
    write: [...write.keys()].sort(),
    remove: removing.sort(),
    commit(more = new Map()) {
      const extra = new Map([...more].filter(([rel, file]) => {
        const stat = inspect(stateDir, rel);
        return stat === null || !holds(join(stateDir, rel), stat, file);
      }));
      if (write.size + extra.size + removing.length === 0) return;
      if (staging === undefined) {
        staging = `${STAGING_PREFIX}${randomBytes(6).toString("hex")}`;
        mkdirSync(join(stateDir, staging), { mode: PRIVATE_FOLDER_MODE });
      }
      writeStaged(join(stateDir, staging), extra);
      syncFolder(stateDir);
      const journal: Journal = { staging, write: [...write.keys(), ...extra.keys()], remove: removing };
      writeFileDurable(join(stateDir, JOURNAL_FILE), `${JSON.stringify(journal)}\n`);
      committed = true;
      carryOut(stateDir, journal);
    },
    discard,
  };
}

/** Makes the folders above `rel` that are missing (each inspected: never through a link); returns the folders made. */
function makeParents(stateDir: string, rel: string): string[] {
  const parts = components(rel).slice(0, -1);
  const made: string[] = [];
  for (let i = 1; i <= parts.length; i += 1) {
    const sub = parts.slice(0, i).join("/");
    if (isFolder(stateDir, sub)) continue;
    mkdirSync(join(stateDir, sub), { mode: PRIVATE_FOLDER_MODE });
    made.push(dirname(join(stateDir, sub)));
  }
  return made;
}

/** Removes `dir` and the folders above it while they are empty, never `stateDir` itself; returns the folders changed. */
function removeEmptyFolders(stateDir: string, dir: string): string[] {
  const changed: string[] = [];
  for (let current = dir; current.startsWith(`${stateDir}/`); current = dirname(current)) {
    const stat = lstatOrNull(current);
    if (!stat?.isDirectory() || readdirSync(current).length > 0) break;
    rmdirSync(current);
    changed.push(dirname(current));
  }
  return changed;
}

/** Carries out a committed journal (again, after a crash: each step is skipped once done), then removes it and the staging folder. */
function carryOut(stateDir: string, journal: Journal): void {
  const touched = new Set<string>();
  for (const rel of journal.write) {
    const from = join(stateDir, journal.staging, ...components(rel));
    if (lstatOrNull(from) === null) continue;
    inspect(stateDir, rel);
    for (const dir of makeParents(stateDir, rel)) touched.add(dir);
    renameSync(from, join(stateDir, rel));
    touched.add(dirname(join(stateDir, rel)));
  }
  for (const rel of journal.remove) {
    if (inspect(stateDir, rel) === null) continue;
    unlinkSync(join(stateDir, rel));
    touched.add(dirname(join(stateDir, rel)));
    for (const dir of removeEmptyFolders(stateDir, dirname(join(stateDir, rel)))) touched.add(dir);
  }
  for (const dir of touched) if (existsSync(dir)) syncFolder(dir);
  removeFileDurable(join(stateDir, JOURNAL_FILE));
  rmSync(join(stateDir, journal.staging), { recursive: true, force: true });
  syncFolder(stateDir);
}

/** The temporary name files/durable.ts writes beside a file (`.<name>.<pid>.<random>.tmp`). */
const DURABLE_TEMPORARY = /^\..+\.\d+\.[0-9a-f]{8}\.tmp$/;
/** Whether `name` is the temporary name of one of `names` (their own folder's). */
const temporaryOf = (name: string, names: readonly string[]) => DURABLE_TEMPORARY.test(name) && names.some((own) => name.startsWith(`.${own}.`));

/**
 * At start (and before each change): finishes a change a crash interrupted after its commit (the
 * new tree), removes staging folders of changes never committed (the old tree stays), and the
 * temporary files a write killed midway left beside a file of the tree: `files()` (relative paths,
 * read after the journal is finished) names them. Anything else is left alone: another writer's
 * temporary in the state folder, a module's own in its folder. Throws UnsafeTreePath when a link
 * stands on a journal's path or a tree file's folder (the journal stays, finished once it goes).
 */
export function finishInterrupted(stateDir: string, files: () => readonly string[]): void {
  const journalFile = join(stateDir, JOURNAL_FILE);
  if (existsSync(journalFile)) carryOut(stateDir, JSON.parse(readFileSync(journalFile, "utf8")) as Journal);
  const byFolder = new Map<string, string[]>([["", [JOURNAL_FILE]]]);
  for (const rel of files()) {
    const parts = components(rel);
    const folder = parts.slice(0, -1).join("/");
    byFolder.set(folder, [...(byFolder.get(folder) ?? []), parts.at(-1)!]);
  }
  for (const [folder, names] of byFolder) {
    const dir = join(stateDir, folder);
    if (folder !== "" && !isFolder(stateDir, folder)) continue;
    let removed = false;
    for (const name of readdirSync(dir)) {
      const staging = folder === "" && name.startsWith(STAGING_PREFIX);
      if (!staging && !temporaryOf(name, names)) continue;
      rmSync(join(dir, name), { recursive: true, force: true });
      removed = true;
    }
    if (removed) syncFolder(dir);
  }
}
