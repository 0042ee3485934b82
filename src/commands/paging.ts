/**
 * Pages of list replies (R59): no reply may exceed the bus's max payload, so a list verb answers
 * one page of its sorted list and, when more remain, a `continue` token (kubectl's shape). The
 * token is opaque to the client; it names the verb and the key of the last item handed out, so it
 * stays valid whatever the catalogue does meanwhile: the next page starts at the first item that
 * sorts after that key in the list as it is then (items added before it are not shown, items
 * removed are not missed). Pure: the shell calls it with the whole answer and a byte budget.
 */
import { z } from "zod";
import type { Refusal } from "./envelope.ts";
import { PAGE_LIMIT_MAX, type PageRequest } from "../contracts/verbs.ts";

export { PAGE_LIMIT_MAX };

/** A list verb's paging: the reply field holding its list, and each item's sort key. */
export type PageSpec = {
  /** The answer's field holding the list: an array sorted by `key`, or an object keyed by name. */
  field: string;
  /** The key the array is sorted by (unique per item); ignored for an object, whose keys are used. */
  key?(item: unknown): string;
  /** The order the list is sorted in (default byCodePoint): where a removed key's successor is. */
  compare?(a: string, b: string): number;
};

type Token = { verb: string; after: string };

/** The opaque token naming the position after `after` in `verb`'s list (base64url JSON). */
export function continueToken(verb: string, after: string): string {
  return Buffer.from(JSON.stringify({ v: 1, verb, after }), "utf8").toString("base64url");
}

/** The position a token names, or a refusal `invalid-continue` (field `continue`) naming the fix. */
export function readContinueToken(verb: string, token: string): { ok: true; value: Token } | { ok: false; refusal: Refusal } {
  const refusal = (why: string): { ok: false; refusal: Refusal } => ({
    ok: false,
    refusal: { code: "invalid-continue", message: `"continue": ${why}: pass the token of the previous page of ${verb} unchanged, or leave it out to start from the first page`, field: "continue" },
  });
  let raw: unknown;
  try {
    raw = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
  } catch {
    return refusal("not a continue token");
  }
  const parsed = z.object({ v: z.literal(1), verb: z.string(), after: z.string() }).safeParse(raw);
  if (!parsed.success) return refusal("not a continue token");
  if (parsed.data.verb !== verb) return refusal(`the token is for ${parsed.data.verb}, not ${verb}`);
  return { ok: true, value: { verb, after: parsed.data.after } };
}

/** Byte length of `value` as JSON, the way the reply is sent. */
function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value), "utf8");
}

/**
 * Cuts one page out of `answer[spec.field]` (R59): the items after the token's key, at most
 * `request.limit` of them, and no more than fit with the rest of the reply in `budgetBytes` (at
 * least one item, so a page always moves on). Returns the answer with the page in place of the
 * list and `continue` when items remain. `answer` must hold the whole list sorted by key (arrays:
 * by `spec.key` in `spec.compare` order, as given; objects: keys are sorted here by code point).
 * Refuses `invalid-continue` (field `continue`) for a token that is not one of this verb's.
 */
export function pageOf(
  verb: string,
  spec: PageSpec,
  answer: Record<string, unknown>,
  request: PageRequest,
  budgetBytes: number,
): { ok: true; value: Record<string, unknown> } | { ok: false; refusal: Refusal } {
  let after: string | undefined;
  if (request.continue !== undefined) {
    const token = readContinueToken(verb, request.continue);
    if (!token.ok) return token;
    after = token.value.after;
  }
  const whole = answer[spec.field];
  const isArray = Array.isArray(whole);
  const entries: Array<[string, unknown]> = isArray
    ? (whole as unknown[]).map((item) => [spec.key!(item), item])
    : Object.entries((whole ?? {}) as Record<string, unknown>).sort(([a], [b]) => byCodePoint(a, b));
  // The first item sorting after the token's key: the list is sorted, so a linear scan from the
  // start finds it wherever items were added or removed since the token was handed out.
  let start = 0;
  if (after !== undefined) {
    const compare = (isArray ? spec.compare : undefined) ?? byCodePoint;
    const index = entries.findIndex(([key]) => compare(key, after!) > 0);
    start = index < 0 ? entries.length : index;
  }
  const limit = request.limit ?? PAGE_LIMIT_MAX;
  // What the reply weighs without its list, plus room for a token and the envelope (ok, asOf).
  const overhead = jsonBytes({ ...answer, [spec.field]: [] }) + jsonBytes(continueToken(verb, entries[entries.length - 1]?.[0] ?? "")) + 256;
  let used = overhead;
  let end = start;
  while (end < entries.length && end - start < limit) {
    const [key, item] = entries[end]!;
    const size = jsonBytes(item) + (isArray ? 1 : jsonBytes(key) + 2);
    if (end > start && used + size > budgetBytes) break;
    used += size;
    end += 1;
  }
  const page = entries.slice(start, end);
  const list = isArray ? page.map(([, item]) => item) : Object.fromEntries(page);
  const value: Record<string, unknown> = { ...answer, [spec.field]: list };
  if (end < entries.length) value.continue = continueToken(verb, entries[end - 1]?.[0] ?? after ?? "");
  return { ok: true, value };
}

/** Code-point order: how object keys and `nodeNames` sort. */
export function byCodePoint(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
