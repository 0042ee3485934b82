/**
 * R68: an asker's `seen`, the highest records sequence its CLI has seen, as evidence that the
 * records are behind (R43). The controller vouches for the sequence it folded in each reply to a
 * request carrying `seen` (seenTag under the mesh key); the CLI keeps the highest beside its
 * credential, on its own machine, and sends it with every command. A whole-folder restore of the
 * controller's machine brings back the records and their mark together, but not that file: a
 * claim past the records' end, whose tag verifies, latches `behind`. A claim without the tag, or
 * with one that is not the controller's, is no evidence (an asker cannot make the controller
 * refuse everything by saying a big number). Pure: the shell is serverSeen.ts.
 */
import { Seen } from "../contracts/verbs.ts";
import type { BehindEvidence } from "../events/RecordsRestored.ts";
import type { Refusal, Reply } from "./envelope.ts";

/** How the shell vouches for a folded sequence and checks a claim (seenTag, seenTagVerifies under the mesh key). */
export type SeenVouch = { tag(sequence: number): string; verifies(sequence: number, tag: string): boolean };

/**
 * What one claim is worth (judgeSeen): `none` when it names nothing past what the controller
 * accounts for; `untagged` / `tag-refused` when it does without the controller's tag on it: no
 * evidence; `ahead` when the controller vouched for `sequence` once: ask the records where they end.
 */
export type SeenJudgement = { kind: "none" } | { kind: "untagged" | "tag-refused" | "ahead"; sequence: number };

/**
 * Judges `seen` against `known`, the highest records sequence the controller accounts for (its
 * folded sequence, or an accepted restore's lost end: a claim up to it predates the restore, R44).
 * Only a claim past it is checked against its tag, so the common request costs no tag check. Pure
 * as long as `verifies` is.
 */
export function judgeSeen(seen: Seen, known: number, verifies: SeenVouch["verifies"]): SeenJudgement {
  if (seen.sequence <= known) return { kind: "none" };
  if (seen.tag === undefined) return { kind: "untagged", sequence: seen.sequence };
  if (!verifies(seen.sequence, seen.tag)) return { kind: "tag-refused", sequence: seen.sequence };
  return { kind: "ahead", sequence: seen.sequence };
}

/**
 * The evidence of a verified claim (pure): the bus user `asker` saw records `sequence` in a reply of
 * this controller, past `lastSequence` (the records' end); null when the records reach it.
 */
export function seenAhead(asker: string, sequence: number, lastSequence: number): BehindEvidence | null {
  if (sequence <= lastSequence) return null;
  return {
    kind: "operator-seen-ahead",
    detail: `${asker}'s CLI saw records sequence ${sequence} in a reply of the controller, but the records end at ${lastSequence}`,
  };
}

/**
 * Takes `seen` out of a request's fields (it is no verb's own field): `seen` undefined when the
 * request carries none, else validated (Seen). Refuses `invalid-request` on field `seen`. Pure.
 */
export function takeSeen(fields: Record<string, unknown>): { ok: true; seen: Seen | undefined; rest: Record<string, unknown> } | { ok: false; refusal: Refusal } {
  const { seen, ...rest } = fields;
  if (seen === undefined) return { ok: true, seen: undefined, rest };
  const parsed = Seen.safeParse(seen);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { ok: false, refusal: { code: "invalid-request", message: `"seen": ${issue?.message ?? "invalid"}: send the \`seen\` of the controller's last reply as it came, or leave it out`, field: "seen" } };
  }
  return { ok: true, seen: parsed.data, rest };
}

/**
 * An accepted `reply` with the controller's `seen` on it: `sequence` (the records it folded) and
 * its tag; a refusal as it is (it vouches for nothing). Pure as long as `vouch` is.
 */
export function withSeen(reply: Reply, sequence: number, vouch: SeenVouch): Reply {
  if (!reply.ok) return reply;
  return { ...reply, seen: { sequence, tag: vouch.tag(sequence) } };
}
