import { z } from "zod";

/**
 * `mesh logs` (R72): an operator's question on `logsSubject(node)` and the node agent's answer.
 * `lines` is how many of the newest lines (default LOGS_DEFAULT_LINES, at most LOGS_MAX_LINES);
 * `from` (a follower's next byte offset, the last answer's `size`) asks for what was written since.
 * The answer carries at most 256 KiB of text (`truncated` says when lines were left off). Pure.
 */

export const LOGS_DEFAULT_LINES = 100;
export const LOGS_MAX_LINES = 100_000;

export const LogsRequest = z
  .object({
    module: z.string().min(1).max(200),
    lines: z.number().int().positive().max(LOGS_MAX_LINES).default(LOGS_DEFAULT_LINES),
    from: z.number().int().nonnegative().optional(),
  })
  .strict();
export type LogsRequest = z.infer<typeof LogsRequest>;

export const LogsReply = z.union([
  z.object({ ok: z.literal(true), node: z.string(), module: z.string(), text: z.string(), truncated: z.boolean(), size: z.number().int().nonnegative() }).strict(),
  z.object({ ok: z.literal(false), code: z.enum(["bad-request", "no-module"]), message: z.string() }).strict(),
]);
export type LogsReply = z.infer<typeof LogsReply>;
