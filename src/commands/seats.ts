import type { BodyOf, SeatView } from "../contracts/verbs.ts";
import { claimantsOf, everyAlias, everySeat, holdersOf, type State } from "../projections/index.ts";
import { query } from "./envelope.ts";

/** Each seat (sorted by name): its declaration, claimants, holders (R17) and the aliases resolving to it (R27). */
export function answer(state: State): BodyOf<"seats"> {
  const aliases = everyAlias(state.modules);
  return {
    seats: everySeat(state.modules)
      .sort((a, b) => a.name.localeCompare(b.name))
      .map((seat) => ({
        name: seat.name,
        declaredBy: seat.declaredBy,
        protocol: seat.protocol,
        marker: seat.protocol === "",
        accepts: [...seat.accepts],
        emits: [...seat.emits],
        provides: seat.provides ?? null,
        scope: seat.scope,
        claimants: claimantsOf(state.modules, seat.name),
        holders: holdersOf(state, seat.name),
        aliases: aliases.filter(([, to]) => to === seat.name).map(([from]) => from).sort(),
      })),
  };
}

export const seats = query("seats", {
  answer,
  page: { field: "seats", key: (item) => (item as SeatView).name, compare: (a, b) => a.localeCompare(b) },
});
