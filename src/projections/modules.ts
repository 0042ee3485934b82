import type { Draft } from "immer";
import type { MeshEvent } from "../events/index.ts";
import type { Manifest, SeatDeclaration } from "../manifest/manifest.ts";
import { assertNever } from "./assertNever.ts";

export type ModuleRecord = { manifest: Manifest; registeredAt: string; issued: boolean };
/** A seat of the catalogue: its declaration and the module whose manifest declares it. */
export type SeatRecord = SeatDeclaration & { name: string; declaredBy: string };

/**
 * The catalogue of modules and seats. `seats` is kept by the fold from the manifests so lookups
 * do not scan every module; `aliases` maps an old seat name to its new one (R27).
 */
export type ModulesState = {
  modules: Record<string, ModuleRecord>;
  seats: Record<string, SeatRecord>;
  aliases: Record<string, string>;
};

export const initialModules: ModulesState = { modules: {}, seats: {}, aliases: {} };

/** Fold of registrations, issues and seat aliases. */
export function evolveModules(draft: Draft<ModulesState>, event: MeshEvent): void {
  switch (event.type) {
    case "ModuleRegistered": {
      const name = event.manifest.name;
      const before = draft.modules[name];
      // A new version replaces the old one's seats: drop what it declared before.
      // The seats this module declares are those of its previous manifest (each registration
      // replaces them all), so only those are looked at, not every seat of the catalogue.
      if (before) {
        for (const seat of Object.keys(before.manifest.seats)) {
          if (draft.seats[seat]?.declaredBy === name) delete draft.seats[seat];
        }
      }
      draft.modules[name] = { manifest: event.manifest, registeredAt: event.at, issued: before?.issued ?? false };
      for (const [seat, declaration] of Object.entries(event.manifest.seats)) {
        draft.seats[seat] = { ...declaration, name: seat, declaredBy: name };
      }
      return;
    }
    case "ModuleIssued": {
      const module = draft.modules[event.module];
      if (module) module.issued = true;
      return;
    }
    case "SeatAliased":
      draft.aliases[event.from] = event.to;
      return;
    case "MeshCreated": case "NodeEnrolled": case "NodeRemoved": case "CredentialMinted":
    case "CredentialRotated": case "CredentialRevoked": case "ModuleAssigned": case "ModuleUnassigned":
    case "SeatHandedOver": case "OverlayPlaced": case "ProvisionMinted": case "ProvisionRotated": case "DeclarationSent":
    case "CommitVoided": case "RecordsRestored":
      return;
    default:
      assertNever(event);
  }
}

/**
 * The current name of a seat, following aliases (R27). Stops at the first repeat, so a cycle in
 * the records (which decide refuses) cannot hang a lookup.
 */
export function resolveSeat(state: ModulesState, seat: string): string {
  // Most seats were never renamed: composing a large mesh resolves one per grant.
  if (state.aliases[seat] === undefined) return seat;
  const seen = new Set<string>();
  let name = seat;
  while (state.aliases[name] !== undefined && !seen.has(name)) {
    seen.add(name);
    name = state.aliases[name]!;
  }
  return name;
}

/** The seat of that name (after aliases), or undefined when the catalogue has none. */
export function seatOf(state: ModulesState, seat: string): SeatRecord | undefined {
  return state.seats[resolveSeat(state, seat)];
}

/**
 * The names of the modules whose manifest claims `seat` (after aliases), sorted. O(modules): by
 * their keys, as Object.values of 40,000 modules costs several times more.
 */
export function claimantsOf(state: ModulesState, seat: string): string[] {
  const target = resolveSeat(state, seat);
  const names: string[] = [];
  for (const key of Object.keys(state.modules)) {
    const manifest = state.modules[key]!.manifest;
    for (const claim of manifest.claims) {
      if (resolveSeat(state, claim) === target) {
        names.push(manifest.name);
        break;
      }
    }
  }
  return names.sort();
}
