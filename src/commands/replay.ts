/**
 * `replay` (R44, R45): the operator's command over the records themselves. Served by the shell
 * (src/bootstrap/replayVerb.ts), because it reads the records from sequence 1 and may append past
 * a commit the fold cannot read; its decisions are here, pure.
 *
 * - `{}`: fold from sequence 1 ignoring snapshots, validate every commit, report (changes nothing);
 * - `{ void: <seq>, reason }`: void the commit the fold stopped at (CommitVoided, R45).
 */
import { z } from "zod";
import { RECORDS_ENTITY } from "../names.ts";
import { metaOf, refuse, type Decision, type Envelope } from "./envelope.ts";

/** The verb: `mesh.command.replay` (sent by `mesh replay` through the CLI's send function). */
export const REPLAY_VERB = "replay";

/** `replay {void?, reason?}`. Unknown fields are refused. */
export const ReplayRequest = z
  .object({
    void: z.number().int().positive().optional().describe("the sequence of the commit to void (the one the fold stopped at, R45)"),
    reason: z.string().trim().min(1).max(1000).optional().describe("why the commit is voided (required with void)"),
  })
  .strict();
export type ReplayRequest = z.infer<typeof ReplayRequest>;

/** What the fold stopped at: the sequence and event types of the commit it cannot read (InvalidEvent). */
export type Held = { sequence: number; types: readonly string[] };

/**
 * Decides a void (R45): only the commit the fold stopped at can be voided (a commit already
 * folded is part of the state and of every snapshot since: voiding it would make replay and
 * snapshot + tail differ, R41). Refusals: `invalid-request` (no reason, field `reason`),
 * `not-voidable` (nothing is held, or another sequence is, field `void`). Pure.
 */
export function decideVoid(held: Held | null, request: ReplayRequest, envelope: Envelope): Decision {
  const sequence = request.void;
  if (sequence === undefined) return refuse("invalid-request", "\"void\": name the sequence to void", "void");
  if (request.reason === undefined) return refuse("invalid-request", "\"reason\": say why the commit is voided (it stays in the records)", "reason");
  if (held === null) {
    return refuse("not-voidable", `the records fold to their end: no commit stops the fold, and a folded commit (${sequence}) cannot be voided`, "void");
  }
  if (held.sequence !== sequence) {
    return refuse("not-voidable", `the fold stops at sequence ${held.sequence} (${held.types.join(", ") || "no event types"}), not ${sequence}: void that one first`, "void");
  }
  return {
    ok: true,
    entity: { ...RECORDS_ENTITY },
    events: [{ ...metaOf(envelope), type: "CommitVoided", sequence, types: [...held.types], reason: request.reason }],
  };
}
