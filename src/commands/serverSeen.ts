/**
 * R68, the shell of an asker's `seen` (seen.ts holds the pure judgement): weighed against the
 * records' end read from the bus, latched as evidence, and vouched for in replies, for the verbs
 * handleCommand serves and for those the controller's shell serves (seenAware).
 */
import type { NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { CATALOGUE_STREAM } from "../names.ts";
import type { Seen } from "../contracts/verbs.ts";
import type { Catalogue } from "../records/catalogue.ts";
import { latchBehind } from "../records/behind.ts";
import type { Reply } from "./envelope.ts";
import { judgeSeen, seenAhead, takeSeen, withSeen, type SeenVouch } from "./seen.ts";

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

/** A verb the controller's shell serves (push, replay, reports): the request's fields and the asker. */
type ShellVerb = (body: Record<string, unknown>, actor: string) => Promise<Reply>;

/**
 * Each of `verbs` served as handleCommand serves a command's `seen` (R68): taken out of the fields
 * before the verb's own strict schema reads them, weighed (noteSeen), and vouched for in the
 * accepted reply to a request that carried it. Without `vouch`, `seen` is only taken out.
 */
export function seenAware(verbs: Readonly<Record<string, ShellVerb>>, nc: NatsConnection, catalogue: Catalogue, vouch: SeenVouch | undefined, log: { error(line: string): void }): Record<string, ShellVerb> {
  const wrap = (verb: ShellVerb): ShellVerb => async (body, actor) => {
    const seen = takeSeen(body);
    if (!seen.ok) return { ok: false, error: seen.refusal };
    if (seen.seen === undefined || vouch === undefined) return verb(seen.rest, actor);
    await noteSeen(nc, catalogue, vouch, actor, seen.seen, log);
    return withSeen(await verb(seen.rest, actor), catalogue.state.sequence, vouch);
  };
  return Object.fromEntries(Object.entries(verbs).map(([name, verb]) => [name, wrap(verb)]));
}
