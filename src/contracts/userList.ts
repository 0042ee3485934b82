import { z } from "zod";
import { USER_LIST_DIGEST_HEADER, USER_LIST_PART_HEADER } from "../names.ts";

/**
 * The user list of the broker's holder as it crosses from the controller to the host (DESIGN.md
 * section 7, R11): its text travels in parts, each a message on `userListPartSubject(node, index)`
 * whose body is the part's bytes and whose headers say the list's digest
 * (USER_LIST_DIGEST_HEADER) and `<index>/<count>` (USER_LIST_PART_HEADER); the declaration that
 * follows names the list by its reference. Push writes both, the host reads both, with what is here.
 * Pure.
 */

/** Bytes of one user-list part: a quarter of the bus's default largest message (1 MiB). */
export const USER_LIST_PART_BYTES = 256 * 1024;

/** The most parts one list may have (256 KiB each: 1 GiB), so a bad header cannot fill the disk. */
export const MAX_USER_LIST_PARTS = 4096;

/** A list digest as parts and references carry it: sha256 hex of the list's UTF-8 text (16 to 128 hex digits read). */
export const LIST_DIGEST_PATTERN = /^[0-9a-f]{16,128}$/;

/**
 * How a declaration names the user list it travels with: `digest` (sha256 hex of its UTF-8 text),
 * `bytes` (its size) and `parts` (how many USER_LIST_PART_BYTES parts it is cut into, the last
 * shorter). The one name of this reference on both ends.
 */
export const UserListRef = z
  .object({
    digest: z.string().min(1),
    bytes: z.number().int().nonnegative(),
    parts: z.number().int().positive(),
  })
  .strict();
export type UserListRef = z.infer<typeof UserListRef>;

/** One part as its headers name it: the list's digest, its 0-based index and the part count. */
export type PartHeader = { digest: string; index: number; count: number };

/** The USER_LIST_PART_HEADER value of part `index` of `count`: `<index>/<count>`. */
export function partHeaderValue(index: number, count: number): string {
  return `${index}/${count}`;
}

/** A part message the host cannot use (bad headers). `code` is stable. */
export class UserListPartRefused extends Error {
  override readonly name = "UserListPartRefused";
  readonly code: "bad-header";
  constructor(message: string) {
    super(message);
    this.code = "bad-header";
  }
}

/**
 * Reads a part's headers (USER_LIST_DIGEST_HEADER, USER_LIST_PART_HEADER). `get` returns a header's
 * value or "" when absent (nats.js MsgHdrs.get). Throws UserListPartRefused `bad-header` naming the
 * header that is wrong.
 */
export function readPartHeader(get: (name: string) => string): PartHeader {
  const digest = get(USER_LIST_DIGEST_HEADER);
  const matched = /^(\d{1,6})\/(\d{1,6})$/.exec(get(USER_LIST_PART_HEADER));
  if (!LIST_DIGEST_PATTERN.test(digest)) throw new UserListPartRefused(`a user-list part has no usable ${USER_LIST_DIGEST_HEADER} header`);
  if (!matched) throw new UserListPartRefused(`a user-list part has no usable ${USER_LIST_PART_HEADER} header (want <index>/<count>)`);
  const index = Number(matched[1]);
  const count = Number(matched[2]);
  if (count < 1 || count > MAX_USER_LIST_PARTS || index >= count) {
    throw new UserListPartRefused(`a user-list part says it is ${index}/${count}: the index must be below the count, the count 1..${MAX_USER_LIST_PARTS}`);
  }
  return { digest, index, count };
}
