/**
 * R68, the shell of an asker's `seen` (seen.ts holds the pure judgement): weighed against the
 * records' end read from the bus, latched as evidence, and vouched for in replies, for every verb
 * handleCommand serves (commands, queries and the shell's verbs alike).
 */
import type { NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { CATALOGUE_STREAM } from "../names.ts";
import type { Seen } from "../contracts/verbs.ts";
import type { Catalogue } from "../records/catalogue.ts";
import { latchBehind } from "../records/behind.ts";
import type { Refusal, Reply } from "../commands/envelope.ts";
import { judgeSeen, seenAhead, takeSeen, withSeen, type SeenVouch } from "../commands/seen.ts";

/**
 * Weighs `asker`'s `seen` (R68): a claim past what `catalogue` accounts for, whose tag verifies,
 * and past the records' end (asked of the bus) latches `catalogue.behind` naming the asker and
 * the sequence (latchBehind: one log line). A claim without a valid tag is logged and ignored.
 * Throws what reading the stream's info throws (a bus condition: the command is refused for it).
 */
export async function noteSeen(nc: NatsConnection, catalogue: Catalogue, vouch: SeenVouch, asker: string, seen: Seen, log: { error(line: string): void }): Promise<void> {
  const known = Math.max(catalogue.state.sequence, catalogue.state.mesh?.restoredUpTo ?? 0);
  const judgement = judgeSeen(seen, known, vouch.verifies);
  if (judgement.kind === "none") return;
  if (judgement.kind !== "ahead") {
    const how = judgement.kind === "untagged" ? "without the controller's tag on it" : "with a tag that is not the controller's on it";
    log.error(`${asker} says its CLI saw records sequence ${judgement.sequence}, past the ${known} this controller accounts for, ${how}: no evidence that the records are behind, ignored (R68)`);
    return;
  }
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  const evidence = seenAhead(asker, judgement.sequence, (await jsm.streams.info(CATALOGUE_STREAM)).state.last_seq);
  if (evidence) latchBehind(catalogue, evidence, judgement.sequence, log);
}

/**
 * Takes the asker's `seen` out of a request's `fields` (takeSeen), weighs it (noteSeen) and
 * returns the fields the verb reads and `vouched`, which puts the controller's `seen` on the
 * accepted reply when the request carried one (an older CLI sends none and is sent none: its strict
 * parse of the reply holds). Without `vouch`, `seen` is only taken out. Refuses a bad shape on
 * field `seen`; throws what noteSeen throws.
 */
export async function weighSeen(
  nc: NatsConnection, catalogue: Catalogue, vouch: SeenVouch | undefined, asker: string, fields: Record<string, unknown>, log: { error(line: string): void },
): Promise<{ ok: true; rest: Record<string, unknown>; vouched(reply: Reply): Reply } | { ok: false; refusal: Refusal }> {
  const taken = takeSeen(fields);
  if (!taken.ok) return taken;
  if (taken.seen === undefined || vouch === undefined) return { ok: true, rest: taken.rest, vouched: (reply) => reply };
  await noteSeen(nc, catalogue, vouch, asker, taken.seen, log);
  return { ok: true, rest: taken.rest, vouched: (reply) => withSeen(reply, catalogue.state.sequence, vouch) };
}
