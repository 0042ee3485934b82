import type { z } from "zod";
import { closestName } from "../names.ts";
import type { Refusal } from "./envelope.ts";

/** What of a zod 4 schema's definition keysAt walks: its kind and the schemas it wraps or holds. */
type Definition = { type: string; shape?: Record<string, z.ZodType>; innerType?: z.ZodType; in?: z.ZodType; element?: z.ZodType; valueType?: z.ZodType };

/**
 * The keys the object schema at `path` inside `schema` takes (through optional, default, pipe,
 * array and record), or none when there is no object there. Pure.
 */
function keysAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  let at: z.ZodType | undefined = schema;
  let rest = [...path];
  for (let steps = 0; at !== undefined && steps < 64; steps += 1) {
    const def: Definition = (at as unknown as { _zod: { def: Definition } })._zod.def;
    const wrapped: z.ZodType | undefined = def.innerType ?? def.in;
    if (wrapped !== undefined) at = wrapped;
    else if (rest.length === 0) return def.type === "object" ? Object.keys(def.shape ?? {}) : [];
    else if (def.type === "object") at = def.shape?.[String(rest.shift())];
    else if (def.type === "array") { rest = rest.slice(1); at = def.element; }
    else if (def.type === "record") { rest = rest.slice(1); at = def.valueType; }
    else return [];
  }
  return [];
}

/** Whether `issue` is a required field left out. */
function isMissing(issue: z.core.$ZodIssue): boolean {
  return issue.code === "invalid_type" && issue.message.endsWith("received undefined");
}

/**
 * Turns a zod error into one refusal naming the first bad field (R23): `field` is the dotted path
 * (`manifest.seats.x.wat`), prefixed with `prefix` when given; an unknown field is named as such,
 * with the closest field `schema` (the one that made the error) takes there, when one is close;
 * a required field missing beside an unknown one (`evnt` for `event`) is refused as the unknown one.
 * Pure. `code` is the refusal code the caller wants (`invalid-request`, `invalid-manifest`).
 */
export function refusalOfZodError(error: z.ZodError, code: string, prefix?: string, schema?: z.ZodType): Refusal {
  const first = error.issues[0];
  // A field missing beside an unknown one is most often that field misspelt: the unknown one is named.
  const parent = first !== undefined && isMissing(first) ? first.path.slice(0, -1).join(".") : undefined;
  const issue = (parent === undefined ? undefined : error.issues.find((i) => i.code === "unrecognized_keys" && i.path.join(".") === parent)) ?? first;
  const base = [...(prefix === undefined ? [] : [prefix]), ...(issue?.path ?? []).map(String)];
  if (issue === undefined) return { code, message: `${prefix ?? "request"} is invalid` };
  if (issue.code === "unrecognized_keys") {
    const field = [...base, issue.keys[0] ?? "?"].join(".");
    const others = issue.keys.length > 1 ? ` (and ${issue.keys.slice(1).map((k) => `"${k}"`).join(", ")})` : "";
    const near = schema === undefined ? undefined : closestName(issue.keys[0] ?? "", keysAt(schema, issue.path));
    const fix = near === undefined ? "remove it, the schema is strict" : `did you mean "${near}"? (the schema is strict)`;
    return { code, message: `unknown field "${field}"${others}: ${fix}`, field };
  }
  const field = base.join(".");
  const where = field === "" ? "the request" : `"${field}"`;
  const message = isMissing(issue) ? `${where} is missing: it is required` : `${where}: ${issue.message}`;
  return field === "" ? { code, message } : { code, message, field };
}

/**
 * Validates a request payload against a verb's schema. Returns the parsed value, or the refusal
 * `invalid-request` naming the first bad field. The command server and the tests both use this,
 * so a schema refusal reads the same everywhere. Pure.
 */
export function parseRequest<Schema extends z.ZodType>(
  schema: Schema,
  payload: unknown,
): { ok: true; value: z.infer<Schema> } | { ok: false; refusal: Refusal } {
  const parsed = schema.safeParse(payload);
  if (parsed.success) return { ok: true, value: parsed.data };
  return { ok: false, refusal: refusalOfZodError(parsed.error, "invalid-request", undefined, schema) };
}

/**
 * The deepest nesting of arrays and objects a request may have, on both ends (the CLI checks a
 * file before sending, the command server every body it receives): far above any manifest, far
 * below the stack that JSON.stringify and the validators recurse on.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * The path (keys, and indexes as numbers, from the top) to the first value that nests past `limit` arrays or
 * objects in a parsed JSON value (a scalar is 0 deep), or null when none does. Counted without
 * recursion and stopping there: a value nested some 10,000 deep overflows the stack of everything
 * recursive after it ("Maximum call stack size exceeded") instead of being refused. Pure.
 */
export function pathPastDepth(value: unknown, limit = MAX_JSON_DEPTH): Array<string | number> | null {
  // Each entry links to its parent's, so the path is built once, for the value found.
  type Entry = { value: unknown; depth: number; key: string | number; parent: Entry | null };
  const stack: Entry[] = [{ value, depth: 0, key: "", parent: null }];
  while (stack.length > 0) {
    const entry = stack.pop()!;
    const v = entry.value;
    if (v === null || typeof v !== "object") continue;
    if (entry.depth + 1 > limit) {
      const path: Array<string | number> = [];
      for (let at: Entry | null = entry; at?.parent; at = at.parent) path.unshift(at.key);
      return path;
    }
    const inner: Array<[string | number, unknown]> = Array.isArray(v) ? v.map((item, i) => [i, item]) : Object.entries(v);
    for (const [key, item] of inner) stack.push({ value: item, depth: entry.depth + 1, key, parent: entry });
  }
  return null;
}

/** Whether a parsed JSON value nests past `limit` arrays or objects (pathPastDepth). Pure. */
export function jsonDepthOver(value: unknown, limit = MAX_JSON_DEPTH): boolean {
  return pathPastDepth(value, limit) !== null;
}

/** Object keys of a too-deep path a refusal names as its field: the keys before the first array index, at most this many. */
const DEPTH_FIELD_KEYS = 3;

/**
 * A request body as the command server reads it, before any schema (R65): one JSON object (an
 * empty body is `{}`), nested at most MAX_JSON_DEPTH deep. Refusals: `invalid-json` (not JSON, or
 * not one object); nested deeper, refused here, before anything recursive meets it, naming the
 * limit and, as `field`, the keys leading to it: `invalid-manifest` when it lies in `manifest`
 * (R23: a manifest's refusals are invalid-manifest), else `invalid-request`. Pure.
 */
export function parseRequestBody(text: string): { ok: true; body: Record<string, unknown> } | { ok: false; refusal: Refusal } {
  let body: unknown;
  try {
    body = text.length === 0 ? {} : JSON.parse(text);
  } catch {
    return { ok: false, refusal: { code: "invalid-json", message: "the request body is not JSON: send one JSON object" } };
  }
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    return { ok: false, refusal: { code: "invalid-json", message: "the request body must be one JSON object" } };
  }
  const path = pathPastDepth(body);
  if (path === null) return { ok: true, body: body as Record<string, unknown> };
  const firstIndex = path.findIndex((key) => typeof key === "number");
  const field = path.slice(0, Math.min(firstIndex === -1 ? path.length : firstIndex, DEPTH_FIELD_KEYS)).join(".");
  const code = path[0] === "manifest" ? "invalid-manifest" : "invalid-request";
  const message = `${field === "" ? "the request" : `"${field}"`} nests arrays or objects more than ${MAX_JSON_DEPTH} deep (the limit of a request): no request needs that; flatten it`;
  return { ok: false, refusal: field === "" ? { code, message } : { code, message, field } };
}
