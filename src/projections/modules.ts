import type { MeshEvent } from "../events/index.ts";
import type { Manifest, SeatDeclaration } from "../manifest/manifest.ts";
import { assertNever } from "./assertNever.ts";
import { deleteIn, emptyBuckets, entriesIn, getIn, keysIn, setIn, valuesIn, type Buckets, type Owned } from "./buckets.ts";

export type ModuleRecord = { manifest: Manifest; registeredAt: string; issued: boolean };
/** A seat of the catalogue: its declaration and the module whose manifest declares it. */
export type SeatRecord = SeatDeclaration & { name: string; declaredBy: string };

/**
 * The catalogue of modules and seats, each a bucketed map (buckets.ts: they grow with the mesh).
 * `seats` is kept by the fold from the manifests so lookups do not scan every module; `aliases`
 * maps an old seat name to its new one (R27). Read them with moduleOf, everyModule, moduleNames,
 * declaredSeat, seatNames, everySeat, aliasOf, everyAlias, resolveSeat, seatOf and claimantsOf.
 */
export type ModulesState = {
  modules: Buckets<ModuleRecord>;
  seats: Buckets<SeatRecord>;
  aliases: Buckets<string>;
  /**
   * Modules retired and not registered since, by name: the version retired and when. A plain
   * object (few, and copied whole when one changes): it lets a repeated retire answer `unchanged`
   * rather than `unknown-module`.
   */
  retired: Readonly<Record<string, RetiredModule>>;
};

/** A module that left the catalogue (`mesh module retire`): the version it had and when it went. */
export type RetiredModule = { version: string; at: string };

export const initialModules: ModulesState = { modules: emptyBuckets(), seats: emptyBuckets(), aliases: emptyBuckets(), retired: {} };

/**
 * Fold of registrations, issues and seat aliases: the catalogue after `event`, a new object when it
 * changed (`owned`: see buckets.ts setIn; records are replaced, never changed).
 */
export function evolveModules(state: ModulesState, event: MeshEvent, owned: Owned): ModulesState {
  switch (event.type) {
    case "ModuleRegistered": {
      const name = event.manifest.name;
      const before = getIn(state.modules, name);
      let seats = state.seats;
      // A new version replaces the old one's seats: drop what it declared before.
      // The seats this module declares are those of its previous manifest (each registration
      // replaces them all), so only those are looked at, not every seat of the catalogue.
      if (before) {
        for (const seat of Object.keys(before.manifest.seats)) {
          if (getIn(seats, seat)?.declaredBy === name) seats = deleteIn(seats, seat, owned);
        }
      }
      const modules = setIn(state.modules, name, { manifest: event.manifest, registeredAt: event.at, issued: before?.issued ?? false }, owned);
      for (const [seat, declaration] of Object.entries(event.manifest.seats)) {
        seats = setIn(seats, seat, { ...declaration, name: seat, declaredBy: name }, owned);
      }
      return { ...state, modules, seats, retired: withoutKey(state.retired, name) };
    }
    case "ModuleRetired": {
      const before = getIn(state.modules, event.module);
      let seats = state.seats;
      for (const seat of Object.keys(before?.manifest.seats ?? {})) {
        if (getIn(seats, seat)?.declaredBy === event.module) seats = deleteIn(seats, seat, owned);
      }
      const retired = { ...state.retired, [event.module]: { version: event.version, at: event.at } };
      return { ...state, modules: deleteIn(state.modules, event.module, owned), seats, retired };
    }
    case "ModuleIssued": {
      const module = getIn(state.modules, event.module);
      if (!module || module.issued) return state;
      return { ...state, modules: setIn(state.modules, event.module, { ...module, issued: true }, owned) };
    }
    case "SeatAliased":
      return { ...state, aliases: setIn(state.aliases, event.from, event.to, owned) };
    case "MeshCreated": case "NodeEnrolled": case "NodeRemoved": case "CredentialMinted":
    case "CredentialRotated": case "CredentialRevoked": case "ModuleAssigned": case "ModuleUnassigned":
    case "SeatHandedOver": case "OverlayPlaced": case "ProvisionMinted": case "ProvisionRotated": case "DeclarationSent":
    case "CommitVoided": case "RecordsRestored":
      return state;
    default:
      return assertNever(event);
  }
}

/** `record` without `key` (itself when it has none). */
function withoutKey<T>(record: Readonly<Record<string, T>>, key: string): Readonly<Record<string, T>> {
  if (!Object.hasOwn(record, key)) return record;
  const { [key]: _gone, ...rest } = record;
  return rest;
}

/** The retirement of module `name` when it was retired and not registered since, else undefined. */
export function retiredModuleOf(state: ModulesState, name: string): RetiredModule | undefined {
  return Object.hasOwn(state.retired, name) ? state.retired[name] : undefined;
}

/** The registered module of that name, or undefined. */
export function moduleOf(state: ModulesState, name: string): ModuleRecord | undefined {
  return getIn(state.modules, name);
}

/** Every registered module, in no particular order (sort where the order shows). */
export function everyModule(state: ModulesState): ModuleRecord[] {
  return valuesIn(state.modules);
}

/** Every registered module's name, sorted. */
export function moduleNames(state: ModulesState): string[] {
  return keysIn(state.modules).sort();
}

/** The seat declared under exactly that name (no aliases followed), or undefined. */
export function declaredSeat(state: ModulesState, seat: string): SeatRecord | undefined {
  return getIn(state.seats, seat);
}

/** Every declared seat's name, in no particular order (sort where the order shows). */
export function seatNames(state: ModulesState): string[] {
  return keysIn(state.seats);
}

/** Every declared seat, in no particular order (sort where the order shows). */
export function everySeat(state: ModulesState): SeatRecord[] {
  return valuesIn(state.seats);
}

/** Every seat alias as [old name, the name it points to], in no particular order. */
export function everyAlias(state: ModulesState): [string, string][] {
  return entriesIn(state.aliases);
}

/** The name `seat` is an alias of (one step, R27), or undefined when it is none. */
export function aliasOf(state: ModulesState, seat: string): string | undefined {
  return getIn(state.aliases, seat);
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
  return getIn(state.seats, resolveSeat(state, seat));
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
