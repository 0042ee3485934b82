import { ModuleRetireRequest, type BodyOf } from "../contracts/verbs.ts";
import type { MeshEvent } from "../events/index.ts";
import { credentialOf, everyModule, moduleOf, nodesOfModule, resolveSeat, retiredModuleOf, type State } from "../projections/index.ts";
import { toolUseOf, usedSeats } from "../manifest/manifest.ts";
import { command, metaOf, refuse, unchanged, type Decision, type Envelope } from "./envelope.ts";

/**
 * A registered module leaves the catalogue; its history stays (issue 29). Refusals:
 * - `unknown-module`: neither registered nor retired (a typo is named as one);
 * - `module-assigned`: it is on nodes, named with the `mesh unassign` to run for each (a retired
 *   module would leave nodes running code the records no longer describe);
 * - `seat-in-use`: another module claims, uses or follows a seat it declares (R25: the catalogue
 *   would hold a claim on a seat it does not have).
 * - `tool-in-use`: another module's `uses` names one of its tools (R74: the grant would name a
 *   tool nobody offers).
 * A module retired and not registered since is accepted `unchanged`. Success, about
 * `module/<module>`: CredentialRevoked of `module:<module>` when it holds a credential (its key is
 * retired for good, R66, and the next push leaves it off the user list), then ModuleRetired.
 */
export function decide(state: State, command: ModuleRetireRequest, envelope: Envelope): Decision {
  const entity = { kind: "module", id: command.module };
  const module = moduleOf(state.modules, command.module);
  if (!module) {
    if (retiredModuleOf(state.modules, command.module)) return unchanged(entity);
    return refuse("unknown-module", `no module "${command.module}" is registered: \`mesh modules\` lists them`, "module");
  }
  const nodes = nodesOfModule(state.assignments, command.module);
  if (nodes.length > 0) {
    const fix = nodes.map((node) => `\`mesh unassign ${command.module} ${node}\``).join(", ");
    return refuse("module-assigned", `module "${command.module}" is assigned to ${nodes.join(", ")}: take it off first (${fix}), then retire it`, "module");
  }
  const dependant = dependantOf(state, command.module);
  if (dependant) {
    return refuse("seat-in-use", `module "${dependant.module}" claims, uses or follows seat "${dependant.seat}", which "${command.module}" declares: change or retire "${dependant.module}" first`, "module");
  }
  const caller = toolCallerOf(state, command.module);
  if (caller) {
    return refuse("tool-in-use", `module "${caller.module}" uses the tool ${caller.use}: change or retire "${caller.module}" first`, "module");
  }
  const meta = metaOf(envelope);
  const principal = { kind: "module" as const, name: command.module };
  const revoked: MeshEvent[] = credentialOf(state.credentials, principal) ? [{ ...meta, type: "CredentialRevoked", principal }] : [];
  return { ok: true, entity, events: [...revoked, { ...meta, type: "ModuleRetired", module: command.module, version: module.manifest.version }] };
}

/** Another module whose claims, uses or follows name (after aliases, R27) a seat `module` declares, and that seat; or undefined. */
function dependantOf(state: State, module: string): { module: string; seat: string } | undefined {
  const declared = new Set(Object.keys(moduleOf(state.modules, module)?.manifest.seats ?? {}));
  if (declared.size === 0) return undefined;
  for (const { manifest } of everyModule(state.modules).sort((a, b) => a.manifest.name.localeCompare(b.manifest.name))) {
    if (manifest.name === module) continue;
    const names = [...manifest.claims, ...usedSeats(manifest), ...manifest.follows.map((f) => f.seat)];
    const seat = names.map((name) => resolveSeat(state.modules, name)).find((name) => declared.has(name));
    if (seat !== undefined) return { module: manifest.name, seat };
  }
  return undefined;
}

/** Another module whose `uses` names a tool of `module` (`<module>/<tool>`, R74), with that line; or undefined. */
function toolCallerOf(state: State, module: string): { module: string; use: string } | undefined {
  for (const { manifest } of everyModule(state.modules).sort((a, b) => a.manifest.name.localeCompare(b.manifest.name))) {
    if (manifest.name === module) continue;
    const use = manifest.uses.find((entry) => toolUseOf(entry)?.module === module);
    if (use !== undefined) return { module: manifest.name, use };
  }
  return undefined;
}

/** `{ module, version, credentialRevoked }`: the version retired and whether this commit revoked its credential. */
export function reply(state: State, events: readonly MeshEvent[], _tools: unknown, _entity: unknown, command: ModuleRetireRequest): BodyOf<"module.retire"> {
  return {
    module: command.module,
    version: retiredModuleOf(state.modules, command.module)?.version ?? "",
    credentialRevoked: events.some((e) => e.type === "CredentialRevoked"),
  };
}

export const moduleRetire = command("module.retire", {
  secretsNeeded: () => 0,
  decide,
  reply,
});
