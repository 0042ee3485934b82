import type { MeshEvent } from "../events/index.ts";
import { provisionKey, type State } from "../projections/index.ts";
import { requiredProvisions } from "../compose/provisions.ts";
import { metaOf, refuse, type Decision, type Envelope } from "./envelope.ts";

/**
 * What a push's mint of provisions takes (R31): the push it is part of (the commit's entity), the
 * secrets the shell sealed with the mesh key beforehand, by provisionKey(seat, provision,
 * consumer), and at most how many to mint in this commit.
 */
export type ProvisionsMintInput = { pushId: string; sealed: ReadonlyMap<string, string>; limit: number };

/**
 * R31: mints the provisions compositions need and the records lack (requiredProvisions, in its
 * order), the first `limit` of them, each with the secret the shell sealed for its key: one
 * ProvisionMinted per provision, `user` the consumer, about `push/<pushId>`. A needed provision the
 * shell made no secret for (the records moved between its look and this decide) is left for the
 * next commit. Refusals: `nothing-to-mint` when no provision is missing; `no-secret` when some are
 * but none has a secret (the shell looks again and makes theirs). Pure.
 */
export function decideProvisionsMint(state: State, input: ProvisionsMintInput, envelope: Envelope): Decision {
  const needed = requiredProvisions(state);
  if (needed.length === 0) return refuse("nothing-to-mint", "no provision is missing");
  const meta = metaOf(envelope);
  const events: MeshEvent[] = [];
  for (const p of needed) {
    if (events.length >= input.limit) break;
    const sealed = input.sealed.get(provisionKey(p.seat, p.provision, p.consumer));
    if (sealed === undefined) continue;
    events.push({ ...meta, type: "ProvisionMinted", seat: p.seat, provision: p.provision, consumer: p.consumer, user: p.consumer, sealed });
  }
  if (events.length === 0) return refuse("no-secret", `${needed.length} provision(s) are missing but no secret was made for them: look again`, "sealed");
  return { ok: true, entity: { kind: "push", id: input.pushId }, events };
}
