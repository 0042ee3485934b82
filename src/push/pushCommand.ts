import { z } from "zod";
import { MeshName } from "../manifest/manifest.ts";
import type { Reply } from "../commands/envelope.ts";
import type { ExtraVerb } from "../commands/server.ts";
import { parseRequest } from "../commands/validation.ts";
import type { PushLog, PushOptions, PushReport } from "./push.ts";

/** The verb of a push request: `mesh.command.push`. */
export const PUSH_VERB = "push";

/** The longest `--wait` a request may ask for, in milliseconds (10 minutes). */
export const MAX_PUSH_WAIT_MS = 600_000;

/** `push {nodes?, wait?, timeoutMs?, dryRun?}`: see push(). Unknown fields are refused. */
export const PushRequest = z
  .object({
    nodes: z.array(MeshName).default([]).describe("nodes to send even when not behind (the behind ones are sent too, R31)"),
    wait: z.boolean().default(false).describe("wait for each sent node's report of the applied digest (R32)"),
    timeoutMs: z.number().int().positive().max(MAX_PUSH_WAIT_MS).optional().describe("milliseconds to wait with `wait`"),
    dryRun: z.boolean().default(false).describe("compose and report, secrets redacted; send nothing"),
  })
  .strict();
export type PushRequest = z.infer<typeof PushRequest>;

/** The reply of a push: `{ ok: true, ...PushReport }`. */
export type PushReply = { ok: true } & PushReport;

/**
 * The `push` verb as the command server serves it (serveCommands' extraVerbs): validates the body
 * and replies with the report of `run` (the controller's push, which runs one push at a time).
 * A body field the schema does not know is refused `invalid-request` naming it.
 */
export function pushVerb(run: (options: PushOptions) => Promise<PushReport>, log: PushLog): ExtraVerb {
  return async (body, actor): Promise<Reply> => {
    const { commandId: _ignored, ...fields } = body;
    const parsed = parseRequest(PushRequest, fields);
    if (!parsed.ok) return { ok: false, error: parsed.refusal };
    const request = parsed.value;
    log.info(`push requested by ${actor}${request.nodes.length ? ` for ${request.nodes.join(", ")}` : ""}${request.dryRun ? " (dry run)" : ""}`);
    const report = await run({
      nodes: request.nodes,
      wait: request.wait,
      dryRun: request.dryRun,
      ...(request.timeoutMs === undefined ? {} : { timeoutMs: request.timeoutMs }),
    });
    return { ok: true, ...report } as unknown as Reply;
  };
}
