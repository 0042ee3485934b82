import { SeatAliasRequest, type BodyOf } from "../contracts/verbs.ts";
import type { MeshEvent } from "../events/index.ts";
import { aliasOf, declaredSeat, resolveSeat, type State } from "../projections/index.ts";
import { command, metaOf, refuse, unchanged, type Decision, type Envelope } from "./envelope.ts";

/**
 * Refusals, in order: `alias-cycle` when following aliases from `to` comes back to `from`
 * (including `from` equal to `to`); `seat-exists` when `from` is the name of a seat some module
 * declares now (an alias would hide it); `unknown-seat` when `to`, after aliases, is no seat of
 * the catalogue. Success: SeatAliased about `seat/<from>`. Re-pointing an existing alias is allowed;
 * the alias `from` → `to` already recorded is accepted `unchanged` (no events): the effect holds.
 */
export function decide(state: State, command: SeatAliasRequest, envelope: Envelope): Decision {
  const catalogue = state.modules;
  const entity = { kind: "seat", id: command.from };
  if (aliasOf(catalogue, command.from) === command.to) return unchanged(entity);
  const seen = new Set<string>();
  for (let name: string | undefined = command.to; name !== undefined && !seen.has(name); name = aliasOf(catalogue, name)) {
    if (name === command.from) {
      return refuse("alias-cycle", `aliasing "${command.from}" to "${command.to}" would make a cycle: "${command.to}" already leads back to "${command.from}"`, "to");
    }
    seen.add(name);
  }
  const declared = declaredSeat(catalogue, command.from);
  if (declared) {
    return refuse("seat-exists", `"${command.from}" is a seat declared by module "${declared.declaredBy}": alias only a name no module declares any more`, "from");
  }
  if (!declaredSeat(catalogue, resolveSeat(catalogue, command.to))) {
    return refuse("unknown-seat", `there is no seat "${command.to}" to alias to: see \`mesh seats\``, "to");
  }
  return {
    ok: true,
    entity,
    events: [{ ...metaOf(envelope), type: "SeatAliased", from: command.from, to: command.to }],
  };
}

/** `{ from, to, resolvesTo }`: the alias (made now or already: unchanged) and the seat it resolves to now. */
export function reply(state: State, _events: readonly MeshEvent[], _tools: unknown, _entity: unknown, command: SeatAliasRequest): BodyOf<"seat.alias"> {
  return { from: command.from, to: command.to, resolvesTo: resolveSeat(state.modules, command.from) };
}

export const seatAlias = command("seat.alias", {
  secretsNeeded: () => 0,
  decide,
  reply,
});
