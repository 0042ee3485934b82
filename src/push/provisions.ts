import type { Envelope } from "../commands/envelope.ts";
import { decideProvisionsMint } from "../commands/provisionsMint.ts";
import { requiredProvisions } from "../compose/provisions.ts";
import { evolve, provisionKey, type State } from "../projections/index.ts";
import { newPassword, sealWithMeshKey } from "../crypto/secrets.ts";
import { REDACTED } from "./composition.ts";
import type { PushContext } from "./context.ts";

/** The provisions a push mints before composing (R31), for real or folded into a dry run's copy. */

/** ProvisionMinted events per commit (~400 bytes each). */
export const MINTED_PER_COMMIT = 1000;

/**
 * Mints every provision compositions need and the records lack (R31), in commits of
 * MINTED_PER_COMMIT: the secrets are made here (randomness is the shell's), the events decided by
 * decideProvisionsMint. Returns how many were minted.
 */
export async function mintProvisions(ctx: PushContext, pushId: string, actor: string, now: string): Promise<number> {
  let minted = 0;
  const sealed = new Map<string, string>();
  for (let batch = 0; ; batch += 1) {
    const needed = requiredProvisions(ctx.catalogue.state).slice(0, MINTED_PER_COMMIT);
    if (needed.length === 0) return minted;
    for (const p of needed) {
      const key = provisionKey(p.seat, p.provision, p.consumer);
      if (!sealed.has(key)) sealed.set(key, sealWithMeshKey(ctx.meshKey, newPassword()));
    }
    const commandId = `${pushId}-provisions-${batch}`;
    const envelope: Envelope = { commandId, actor, now, secrets: [] };
    const result = await ctx.catalogue.transact(commandId, (state) => decideProvisionsMint(state, { pushId, sealed, limit: MINTED_PER_COMMIT }, envelope));
    if (!result.ok) {
      // no-secret: the records moved under the look above; look again (the next batch makes theirs).
      if (result.refusal.code === "no-secret") continue;
      return minted;
    }
    minted += result.events.length;
  }
}

/**
 * `state` with the provisions a push mints before composing (R31) folded in, and how many: the
 * dry run's own copy of the records, so it shows what the push would send rather than a
 * `provision-missing` refusal the push would not have. The same decision as mintProvisions, with
 * the redaction mark for secrets (a dry run redacts every secret anyway); nothing is appended.
 */
export function withProvisionsMinted(state: State, pushId: string, envelope: Envelope): { state: State; count: number } {
  const needed = requiredProvisions(state);
  if (needed.length === 0) return { state, count: 0 };
  const sealed = new Map(needed.map((p) => [provisionKey(p.seat, p.provision, p.consumer), REDACTED]));
  const decision = decideProvisionsMint(state, { pushId, sealed, limit: needed.length }, envelope);
  if (!decision.ok) return { state, count: 0 };
  const commit = { commandId: envelope.commandId, entity: decision.entity, events: decision.events };
  return { state: evolve(state, [{ sequence: state.sequence + 1, commit }]), count: decision.events.length };
}
