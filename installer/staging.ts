import { existsSync, readdirSync, rmSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { makeFolderDurable, moveEntriesDurable, syncFolder } from "../src/files/index.ts";
import { isAlive } from "./bus.ts";

/**
 * Where genesis builds a mesh before it is one (R54, issue 26): a staging folder inside the mesh
 * folder itself, so every temporary file lies beside its target, on its file system. The mesh
 * folder is never renamed and nothing crosses into it from another device: the folder may be a
 * mount point (`mesh up --dir /var/lib/mesh` on a volume of its own), which cannot be renamed
 * (EBUSY) nor receive a rename from its parent's file system (EXDEV).
 *
 * The commit is the last rename: every other entry is moved in and the folder fsynced first, then
 * mesh.json (what hasMesh looks for). A power cut before it leaves a folder without a mesh.json,
 * which genesis refuses as "not empty" unless forced, never a mesh missing half its files.
 */

/** The name every staging folder starts with; a dead genesis's is removed by the next one. */
export const STAGING_PREFIX = ".genesis-";
/** Entries a volume comes with (a new ext4 file system's lost+found): never genesis's, never removed. */
export const VOLUME_ENTRIES: ReadonlySet<string> = new Set(["lost+found"]);

/** The pid in a staging folder's name `.genesis-<pid>-<hex>`, or null for any other name. Pure. */
export function stagingPid(entry: string): number | null {
  const match = /^\.genesis-(\d+)-[0-9a-f]+$/.exec(entry);
  return match ? Number(match[1]) : null;
}

/**
 * The entries of `dir` genesis counts as the folder's content: all but `keep` (the genesis
 * node's own folder), a volume's entries and staging folders. Empty when `dir` does not exist.
 */
export function meshFolderEntries(dir: string, keep: string | null): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter((entry) => entry !== keep && !VOLUME_ENTRIES.has(entry) && stagingPid(entry) === null);
}

/**
 * Makes `dir` when missing (0700) and a new staging folder in it; staging folders left by a
 * genesis that died are removed first. Returns the staging folder and whether `dir` was made.
 */
export function makeStaging(dir: string): { staging: string; madeDir: boolean } {
  const madeDir = !existsSync(dir);
  makeFolderDurable(dir);
  for (const entry of readdirSync(dir)) {
    const pid = stagingPid(entry);
    if (pid !== null && pid !== process.pid && !isAlive(pid)) rmSync(join(dir, entry), { recursive: true, force: true });
  }
  const staging = join(dir, `${STAGING_PREFIX}${process.pid}-${randomBytes(4).toString("hex")}`);
  makeFolderDurable(staging);
  return { staging, madeDir };
}

/** Removes every entry of `dir` genesis counts as content (meshFolderEntries): a forced genesis, or one that failed. */
export function clearMeshFolder(dir: string, keep: string | null): void {
  for (const entry of meshFolderEntries(dir, keep)) rmSync(join(dir, entry), { recursive: true, force: true });
  if (existsSync(dir)) syncFolder(dir);
}

/**
 * Moves every entry of `staging` into `dir`, `last` after the others and a folder fsync (the
 * commit, see the module comment), then removes the empty staging folder (moveEntriesDurable).
 * Throws the file system's error.
 */
export function commitStaging(staging: string, dir: string, last: string): void {
  moveEntriesDurable(staging, dir, last);
}

/** Undoes a genesis that failed: its staging folder, what it put in `dir`, and `dir` itself when genesis made it. */
export function undoGenesis(dir: string, staging: string, madeDir: boolean, keep: string | null): void {
  rmSync(staging, { recursive: true, force: true });
  if (madeDir) {
    rmSync(dir, { recursive: true, force: true });
    return;
  }
  clearMeshFolder(dir, keep);
}
