import type { Draft } from "immer";
import type { Manifest, SeatDeclaration } from "../manifest/manifest.ts";
import { peek, type SliceFold } from "./slice.ts";

export type ModuleRecord = { manifest: Manifest; registeredAt: string; issued: boolean };
/** A seat of the catalogue: its declaration and the module whose manifest declares it. */
export type SeatRecord = SeatDeclaration & { name: string; declaredBy: string };

/**
 * The catalogue of modules and seats. `seats` is kept by the fold from the manifests so lookups
 * do not scan every module; `aliases` maps an old seat name to its new one (R27). Read them with
 * moduleOf, everyModule, moduleNames, declaredSeat, seatNames, everySeat, aliasOf, everyAlias,
 * resolveSeat, seatOf and claimantsOf.
 */
export type ModulesState = {
  readonly modules: ReadonlyMap<string, ModuleRecord>;
  readonly seats: ReadonlyMap<string, SeatRecord>;
  readonly aliases: ReadonlyMap<string, string>;
  /**
   * Modules retired and not registered since, by name: the version retired and when. It lets a
   * repeated retire answer `unchanged` rather than `unknown-module`.
   */
  readonly retired: ReadonlyMap<string, RetiredModule>;
};

/** A module that left the catalogue (`mesh module retire`): the version it had and when it went. */
export type RetiredModule = { version: string; at: string };

/** Drops the seats module `name`'s manifest `before` declared (and it still declares): a new version or a retirement replaces them. */
function dropSeats(state: Draft<ModulesState>, name: string, before: ModuleRecord | undefined): void {
  for (const seat of Object.keys(before?.manifest.seats ?? {})) {
    if (peek(state.seats, seat)?.declaredBy === name) state.seats.delete(seat);
  }
}

/** Fold of registrations, issues, retirements and seat aliases (records are replaced, never changed). */
export const modulesFold: SliceFold<ModulesState> = {
  ModuleRegistered: (state, event) => {
    const name = event.manifest.name;
    const before = peek(state.modules, name);
    // Only the seats of its previous manifest are looked at, not every seat of the catalogue.
    dropSeats(state, name, before);
    state.modules.set(name, { manifest: event.manifest, registeredAt: event.at, issued: before?.issued ?? false });
    for (const [seat, declaration] of Object.entries(event.manifest.seats)) {
      state.seats.set(seat, { ...declaration, name: seat, declaredBy: name });
    }
    state.retired.delete(name);
  },
  ModuleRetired: (state, event) => {
    dropSeats(state, event.module, peek(state.modules, event.module));
    state.retired.set(event.module, { version: event.version, at: event.at });
    state.modules.delete(event.module);
  },
  ModuleIssued: (state, event) => {
    const module = peek(state.modules, event.module);
    if (module && !module.issued) state.modules.set(event.module, { ...module, issued: true });
  },
  SeatAliased: (state, event) => {
    state.aliases.set(event.from, event.to);
  },
};

/** The retirement of module `name` when it was retired and not registered since, else undefined. */
export function retiredModuleOf(state: ModulesState, name: string): RetiredModule | undefined {
  return state.retired.get(name);
}

/** The registered module of that name, or undefined. */
export function moduleOf(state: ModulesState, name: string): ModuleRecord | undefined {
  return state.modules.get(name);
}

/** Every registered module, in no particular order (sort where the order shows). */
export function everyModule(state: ModulesState): ModuleRecord[] {
  return [...state.modules.values()];
}

/** Every registered module's name, sorted. */
export function moduleNames(state: ModulesState): string[] {
  return [...state.modules.keys()].sort();
}

/** The seat declared under exactly that name (no aliases followed), or undefined. */
export function declaredSeat(state: ModulesState, seat: string): SeatRecord | undefined {
  return state.seats.get(seat);
}

/** Every declared seat's name, in no particular order (sort where the order shows). */
export function seatNames(state: ModulesState): string[] {
  return [...state.seats.keys()];
}

/** Every declared seat, in no particular order (sort where the order shows). */
export function everySeat(state: ModulesState): SeatRecord[] {
  return [...state.seats.values()];
}

/** Every seat alias as [old name, the name it points to], in no particular order. */
export function everyAlias(state: ModulesState): [string, string][] {
  return [...state.aliases.entries()];
}

/** The name `seat` is an alias of (one step, R27), or undefined when it is none. */
export function aliasOf(state: ModulesState, seat: string): string | undefined {
  return state.aliases.get(seat);
}

/**
 * The current name of a seat, following aliases (R27). Stops at the first repeat, so a cycle in
 * the records (which decide refuses) cannot hang a lookup.
 */
export function resolveSeat(state: ModulesState, seat: string): string {
  // Most seats were never renamed: composing a large mesh resolves one per grant.
  if (aliasOf(state, seat) === undefined) return seat;
  const seen = new Set<string>();
  let name = seat;
  for (let next = aliasOf(state, name); next !== undefined && !seen.has(name); next = aliasOf(state, name)) {
    seen.add(name);
    name = next;
  }
  return name;
}

/** The seat of that name (after aliases), or undefined when the catalogue has none. */
export function seatOf(state: ModulesState, seat: string): SeatRecord | undefined {
  return state.seats.get(resolveSeat(state, seat));
}

/**
 * The names of the modules whose manifest claims `seat` (after aliases), sorted. O(modules): by
 * their keys, as Object.values of 40,000 modules costs several times more.
 */
export function claimantsOf(state: ModulesState, seat: string): string[] {
  const target = resolveSeat(state, seat);
  const names: string[] = [];
  for (const { manifest } of everyModule(state)) {
    for (const claim of manifest.claims) {
      if (resolveSeat(state, claim) === target) {
        names.push(manifest.name);
        break;
      }
    }
  }
  return names.sort();
}
