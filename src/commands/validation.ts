import type { z } from "zod";
import type { Refusal } from "./envelope.ts";

/**
 * Turns a zod error into one refusal naming the first bad field (R23): `field` is the dotted path
 * (`manifest.seats.x.wat`), prefixed with `prefix` when given; an unknown field is named as such.
 * Pure. `code` is the refusal code the caller wants (`invalid-request`, `invalid-manifest`).
 */
export function refusalOfZodError(error: z.ZodError, code: string, prefix?: string): Refusal {
  const issue = error.issues[0];
  const base = [...(prefix === undefined ? [] : [prefix]), ...(issue?.path ?? []).map(String)];
  if (issue === undefined) return { code, message: `${prefix ?? "request"} is invalid` };
  if (issue.code === "unrecognized_keys") {
    const field = [...base, issue.keys[0] ?? "?"].join(".");
    const others = issue.keys.length > 1 ? ` (and ${issue.keys.slice(1).map((k) => `"${k}"`).join(", ")})` : "";
    return { code, message: `unknown field "${field}"${others}: remove it, the schema is strict`, field };
  }
  const field = base.join(".");
  const where = field === "" ? "the request" : `"${field}"`;
  const missing = issue.code === "invalid_type" && issue.message.endsWith("received undefined");
  const message = missing ? `${where} is missing: it is required` : `${where}: ${issue.message}`;
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
  return { ok: false, refusal: refusalOfZodError(parsed.error, "invalid-request") };
}
