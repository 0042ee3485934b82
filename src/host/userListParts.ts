import { createHash } from "node:crypto";
import { existsSync, readFileSync, readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { LIST_DIGEST_PATTERN, MAX_USER_LIST_PARTS, type PartHeader, type UserListRef } from "../contracts/userList.ts";
import { makeFolderDurable, writeFileDurable } from "../files/index.ts";
import { shortDigest } from "../contracts/declaration.ts";

/**
 * The broker holder's user list arrives in parts (DESIGN.md section 7, R11): push publishes each
 * part on `userListPartSubject(node, index)` with the list's digest and `<index>/<count>` in
 * headers, then the declaration naming the list by `{digest, bytes, parts}`. The host stores each
 * part as it arrives (a file under `<stateDir>/user-list-parts/<digest>/<index>`, so a restart
 * between a part's ack and the declaration loses nothing), and acknowledges it once stored. When a
 * declaration arrives, the parts of the digest it names are joined and checked (count, size,
 * sha256); the list is installed only when complete and matching. Parts of any other digest are
 * stale (an older list, or a newer one whose declaration has not come yet) and never mixed in.
 */

export const USER_LIST_PARTS_FOLDER = "user-list-parts";
/** Lists whose parts are kept at once; storing a part of one more drops the oldest. */
export const MAX_LISTS_KEPT = 4;

/** The outcome of assembling a declared list: its text, or what is missing or wrong. */
export type Assembled =
  | { ok: true; text: string }
  | { ok: false; code: "missing-parts"; missing: number[]; message: string }
  | { ok: false; code: "wrong-digest" | "wrong-size"; message: string };

/** sha256 hex of bytes: the digest composition takes of the list's text (UTF-8). */
export function sha256Bytes(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

function describeMissing(missing: readonly number[], count: number): string {
  const shown = missing.slice(0, 10).join(", ");
  return `${missing.length} of ${count} part(s) missing (${shown}${missing.length > 10 ? ", ..." : ""})`;
}

/** Stored user-list parts of one node, under `<stateDir>/user-list-parts`. */
export class UserListParts {
  readonly #root: string;

  constructor(stateDir: string) {
    this.#root = join(stateDir, USER_LIST_PARTS_FOLDER);
  }

  #folder(digest: string): string {
    return join(this.#root, digest);
  }

  /** The digests with stored parts, oldest folder first. */
  digests(): string[] {
    if (!existsSync(this.#root)) return [];
    return readdirSync(this.#root)
      .filter((name) => LIST_DIGEST_PATTERN.test(name))
      .map((name) => ({ name, at: statSync(join(this.#root, name)).mtimeMs }))
      .sort((a, b) => a.at - b.at || (a.name < b.name ? -1 : 1))
      .map((entry) => entry.name);
  }

  /** The indexes stored for `digest`, ascending. */
  stored(digest: string): number[] {
    const folder = this.#folder(digest);
    if (!LIST_DIGEST_PATTERN.test(digest) || !existsSync(folder)) return [];
    return readdirSync(folder).filter((n) => /^\d+$/.test(n)).map(Number).sort((a, b) => a - b);
  }

  /**
   * Stores one part (atomically, 0600: the list holds hashes). Storing a part again replaces it.
   * Keeps at most MAX_LISTS_KEPT lists: a part of a new one drops the oldest other.
   */
  store(part: PartHeader, bytes: Uint8Array): void {
    const folder = this.#folder(part.digest);
    if (!existsSync(folder)) {
      const others = this.digests();
      for (const old of others.slice(0, Math.max(0, others.length - (MAX_LISTS_KEPT - 1)))) this.discard(old);
      makeFolderDurable(folder);
    }
    writeFileDurable(join(folder, String(part.index)), bytes, { mode: 0o600 });
  }

  /**
   * Joins the parts of the list `ref` names and checks them: every index 0..parts-1 stored (else
   * `missing-parts`, naming them), their total size `ref.bytes` (`wrong-size`), their sha256
   * `ref.digest` (`wrong-digest`). Parts of other digests are never read. Never throws for a
   * missing or bad list.
   */
  assemble(ref: UserListRef): Assembled {
    const count = ref.parts;
    if (!LIST_DIGEST_PATTERN.test(ref.digest) || !Number.isInteger(count) || count < 1 || count > MAX_USER_LIST_PARTS) {
      return { ok: false, code: "wrong-size", message: `the declaration names a user list the host cannot read (${count} parts)` };
    }
    const have = new Set(this.stored(ref.digest));
    const missing: number[] = [];
    for (let index = 0; index < count; index += 1) if (!have.has(index)) missing.push(index);
    const short = shortDigest(ref.digest);
    if (missing.length > 0) {
      return {
        ok: false, code: "missing-parts", missing,
        message: `user list ${short} is incomplete: ${describeMissing(missing, count)}; it is installed when they arrive (the next push sends them again)`,
      };
    }
    const buffers = Array.from({ length: count }, (_, index) => readFileSync(join(this.#folder(ref.digest), String(index))));
    const joined = Buffer.concat(buffers);
    if (joined.length !== ref.bytes) {
      return { ok: false, code: "wrong-size", message: `user list ${short} joins to ${joined.length} bytes, its declaration names ${ref.bytes}: refused` };
    }
    const actual = sha256Bytes(joined);
    if (actual !== ref.digest) {
      return { ok: false, code: "wrong-digest", message: `user list ${short}'s parts join to digest ${shortDigest(actual)}, not the one its declaration names: refused` };
    }
    return { ok: true, text: joined.toString("utf8") };
  }

  /** Deletes the stored parts of `digest`. */
  discard(digest: string): void {
    if (!LIST_DIGEST_PATTERN.test(digest)) return;
    rmSync(this.#folder(digest), { recursive: true, force: true });
  }

  /** Deletes the stored parts of every list but `keep` (none kept when undefined). */
  discardExcept(keep?: string): void {
    for (const digest of this.digests()) if (digest !== keep) this.discard(digest);
  }
}
