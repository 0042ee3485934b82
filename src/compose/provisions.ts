import type { State } from "../projections/index.ts";
import { usedSeats } from "../manifest/manifest.ts";
import { assignedModules, moduleOf, provisionKey, provisionOf, resolveSeat, seatOf } from "../projections/index.ts";

/** A provision a composition needs: the seat whose holder grants it, its name, the module receiving it. */
export type NeededProvision = { seat: string; provision: string; consumer: string };

/**
 * Every (seat, provision, consumer) the compositions of this state need: for each module assigned
 * to a node, each seat it uses (after aliases, R27) whose declaration `provides` something (the
 * provision may share the seat's name, R26). Compositions read these from the records only.
 */
export function neededProvisions(state: State): NeededProvision[] {
  const needed = new Map<string, NeededProvision>();
  for (const [module, nodes] of assignedModules(state.assignments)) {
    const manifest = moduleOf(state.modules, module)?.manifest;
    if (!manifest || nodes.length === 0) continue;
    for (const use of usedSeats(manifest)) {
      const seat = resolveSeat(state.modules, use);
      const provision = seatOf(state.modules, seat)?.provides;
      if (provision === undefined) continue;
      needed.set(provisionKey(seat, provision, module), { seat, provision, consumer: module });
    }
  }
  return [...needed.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, p]) => p);
}

/**
 * The provisions compositions need that the records lack (R31): push mints these (as events)
 * before composing, so composing stays a pure read and one push leaves the mesh consistent.
 * Sorted by seat, provision, consumer.
 */
export function requiredProvisions(state: State): NeededProvision[] {
  return neededProvisions(state).filter((p) => provisionOf(state.provisions, p.seat, p.provision, p.consumer) === undefined);
}
