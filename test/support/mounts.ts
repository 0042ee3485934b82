import { spawnSync } from "node:child_process";
import { closeSync, mkdirSync, openSync, writeSync } from "node:fs";
import { join } from "node:path";

/**
 * Mounts for the tests of issue 26 (R76, a full disk; genesis on a mount point): a small tmpfs
 * and a folder bind-mounted on itself. Both need root (CI runs as root): `mountSkip` is the reason
 * a test skips otherwise. Every mount is undone by `unmount`, which a test calls from `after`.
 */

/** Why a test that mounts is skipped here, or false when it can run (root). */
export const mountSkip: string | false = process.getuid?.() === 0 ? false : "needs root to mount a tmpfs or a bind mount (CI runs as root)";

function run(args: string[]): void {
  const done = spawnSync(args[0]!, args.slice(1), { encoding: "utf8" });
  if (done.status !== 0) throw new Error(`${args.join(" ")} failed: ${(done.stderr || done.stdout).trim()}`);
}

/** Mounts a tmpfs of `bytes` bytes on `dir` (made when missing). */
export function mountTmpfs(dir: string, bytes: number): void {
  mkdirSync(dir, { recursive: true });
  run(["mount", "-t", "tmpfs", "-o", `size=${bytes}`, "tmpfs", dir]);
}

/** Makes `dir` (made when missing) a mount point of its own: a bind mount of itself. */
export function bindMountOnItself(dir: string): void {
  mkdirSync(dir, { recursive: true });
  run(["mount", "--bind", dir, dir]);
}

/** Unmounts `dir` (lazily, so a process still holding a file there cannot keep the mount); nothing when it is not mounted. */
export function unmount(dir: string): void {
  spawnSync("umount", ["-l", dir]);
}

/**
 * Fills the file system of `dir` to its last byte with `<dir>/filler` (written until ENOSPC,
 * in shrinking chunks). Returns the filler's path: removing it gives the space back.
 */
export function fillDisk(dir: string): string {
  const filler = join(dir, "filler");
  const fd = openSync(filler, "a");
  try {
    for (const chunk of [1 << 20, 1 << 16, 1 << 12, 1 << 8, 1]) {
      const bytes = Buffer.alloc(chunk, 0x2e);
      for (;;) {
        try {
          writeSync(fd, bytes);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
          break;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
  return filler;
}
