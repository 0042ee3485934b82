import { ModuleRegisterRequest, type BodyOf } from "../contracts/verbs.ts";
import type { MeshEvent } from "../events/index.ts";
import { Manifest, toolUseOf, usedSeats, type SeatDeclaration } from "../manifest/manifest.ts";
import { aliasOf, declaredSeat, everyAlias, everyModule, everySeat, moduleOf, resolveSeat, seatNames, type State } from "../projections/index.ts";
import { closestName } from "../names.ts";
import { canonicalJson } from "../projections/canonical.ts";
import type { Entity } from "../events/index.ts";
import { command, metaOf, refuse, unchanged, type Decision, type Envelope } from "./envelope.ts";
import { refuseLosingBroker } from "./shared.ts";
import { refusalOfZodError } from "./validation.ts";

/**
 * Judges a manifest with the whole catalogue in view (R23 to R27). Registering is idempotent: a
 * manifest identical to the registered one (canonical JSON of the parsed manifest, defaults filled
 * in) is accepted `unchanged`, with no events. Refusals, in order:
 * - `invalid-manifest`: the strict parser refused it; `field` names the first bad or unknown field (R23);
 * - `version-exists`: a different manifest under the registered name and version (bump the version);
 * - `seat-is-alias`: it declares a seat under a name that is a seat alias (R27: the alias would hide it);
 * - `seat-declared-elsewhere`: it declares a seat another module declares (a seat has one declarer);
 * - `seat-in-use`: a new version drops a seat it declared that another module still claims, uses or follows;
 * - `tool-in-use` (field `manifest.tools`): a new version drops a tool another module uses (R74);
 * - `last-broker-holder` (last, field `manifest.claims`): a new version that no longer claims mesh-broker
 *   while its nodes are the seat's only holders (R49);
 * - `unknown-seat`: a claim, use or follow names a seat neither this manifest nor the catalogue
 *   declares, after aliases (R25);
 * - `unknown-event`: a follow names an event its seat does not emit;
 * - `unknown-tool`: a use `<module>/<tool>` names a module not registered or a tool it does not offer (R74);
 * - `relative-path` (field `manifest.run.command.<i>`): the program is a relative path (`./serve`),
 *   or an argument is a script's relative path (`hello.mjs`): the agent runs the command in the
 *   module's own folder, where neither is (R72).
 * A marker seat (empty protocol) is accepted as written (R24), and a seat may share its name with
 * its provision (R26). Claiming or using a seat another module declares is fine.
 * Success: ModuleRegistered (the parsed manifest, defaults filled in, and `replaces`: the version it
 * replaced, when the module was registered before) about `module/<name>`.
 */
export function decide(state: State, command: ModuleRegisterRequest, envelope: Envelope): Decision {
  const parsed = Manifest.safeParse(command.manifest);
  if (!parsed.success) {
    const refusal = refusalOfZodError(parsed.error, "invalid-manifest", "manifest", Manifest);
    return refuse(refusal.code, refusal.message, refusal.field);
  }
  const manifest = parsed.data;
  const catalogue = state.modules;
  const entity = { kind: "module", id: manifest.name };

  const registered = moduleOf(catalogue, manifest.name)?.manifest;
  if (registered && canonicalJson(registered) === canonicalJson(manifest)) return unchanged(entity);
  if (registered && registered.version === manifest.version) {
    return refuse(
      "version-exists",
      `module "${manifest.name}" version ${manifest.version} is registered with a different manifest: bump "version" to register the change`,
      "manifest.version",
    );
  }
  const refused = seatDeclarationRefusal(catalogue, manifest) ?? droppedSeatRefusal(catalogue, manifest) ?? droppedToolRefusal(catalogue, manifest)
    ?? referenceRefusal(catalogue, manifest) ?? relativePathRefusal(manifest);
  if (refused) return refused;

  const events: MeshEvent[] = [{ ...metaOf(envelope), type: "ModuleRegistered", manifest, ...(registered ? { replaces: registered.version } : {}) }];
  // A new version that stops claiming mesh-broker takes the seat from every node it runs on (R49).
  return refuseLosingBroker(state, entity, events, envelope, "manifest.claims") ?? { ok: true, entity, events };
}

/** A script's file name: what an argument that names a file to run ends with. */
const SCRIPT = /\.(m?js|cjs|ts|py|sh|rb|pl)$/;

/**
 * `relative-path` when `run.command` names its program by a relative path (`./serve`, `bin/serve`:
 * a bare name is looked up on the node's PATH) or passes a script by one (`hello.mjs`): the agent
 * runs the command in the module's own folder (R72), which holds neither, so the module would
 * only ever crash. Options (`-x`, `--a=b`) and other words are passed as written.
 */
function relativePathRefusal(manifest: Manifest): Decision | undefined {
  const command = manifest.run.command ?? [];
  const at = command.findIndex((arg, i) => !arg.startsWith("/") && !arg.startsWith("-") && (i === 0 ? arg.includes("/") : SCRIPT.test(arg)));
  if (at < 0) return undefined;
  const arg = command[at]!;
  return refuse(
    "relative-path",
    `run.command[${at}] "${arg}" is a relative path: the agent runs the command in the module's own folder (<host state>/modules/${manifest.name}), where it is not; give the absolute path where it is on the node`,
    `manifest.run.command.${at}`,
  );
}

/** The catalogue of modules and seats a manifest is judged against. */
type Catalogue = State["modules"];

/** `seat-is-alias` or `seat-declared-elsewhere` for the first seat the manifest may not declare (R27); undefined when none. */
function seatDeclarationRefusal(catalogue: Catalogue, manifest: Manifest): Decision | undefined {
  for (const seat of Object.keys(manifest.seats)) {
    const aliased = aliasOf(catalogue, seat);
    if (aliased !== undefined) {
      return refuse("seat-is-alias", `seat "${seat}" is an alias of "${aliased}": declare it under another name`, `manifest.seats.${seat}`);
    }
    const existing = declaredSeat(catalogue, seat);
    if (existing && existing.declaredBy !== manifest.name) {
      return refuse(
        "seat-declared-elsewhere",
        `seat "${seat}" is declared by module "${existing.declaredBy}": a seat has one declarer; claim it instead of declaring it`,
        `manifest.seats.${seat}`,
      );
    }
  }
  return undefined;
}

/** `seat-in-use`: a new version replaces what the old one declared, so a seat it drops must be one no other module claims, uses or follows. */
function droppedSeatRefusal(catalogue: Catalogue, manifest: Manifest): Decision | undefined {
  for (const record of everySeat(catalogue)) {
    const seat = record.name;
    if (record.declaredBy !== manifest.name || manifest.seats[seat] !== undefined) continue;
    const dependant = everyModule(catalogue).find((m) => {
      if (m.manifest.name === manifest.name) return false;
      const names = [...m.manifest.claims, ...usedSeats(m.manifest), ...m.manifest.follows.map((f) => f.seat)];
      return names.some((name) => resolveSeat(catalogue, name) === seat);
    });
    if (dependant) {
      return refuse(
        "seat-in-use",
        `this version of "${manifest.name}" no longer declares seat "${seat}", which module "${dependant.manifest.name}" still claims, uses or follows: keep declaring it or change that module first`,
        "manifest.seats",
      );
    }
  }
  return undefined;
}

/** `tool-in-use` (R74): a new version keeps every tool another module uses (its grant would vanish unseen). */
function droppedToolRefusal(catalogue: Catalogue, manifest: Manifest): Decision | undefined {
  for (const m of everyModule(catalogue)) {
    if (m.manifest.name === manifest.name) continue;
    const dropped = m.manifest.uses.map(toolUseOf).find((t) => t !== null && t.module === manifest.name && !manifest.tools.some((own) => own.name === t.tool));
    if (dropped) {
      return refuse(
        "tool-in-use",
        `this version of "${manifest.name}" no longer offers the tool "${dropped.tool}", which module "${m.manifest.name}" uses: keep offering it or change that module first`,
        "manifest.tools",
      );
    }
  }
  return undefined;
}

/** `unknown-seat` (R25), `unknown-tool` (R74) or `unknown-event` for the first claim, use or follow that names nothing declared or offered. */
function referenceRefusal(catalogue: Catalogue, manifest: Manifest): Decision | undefined {
  /** The declaration a name refers to: this manifest's own, else the catalogue's (after aliases). */
  const lookup = (name: string): SeatDeclaration | undefined => {
    if (manifest.seats[name]) return manifest.seats[name];
    const resolved = resolveSeat(catalogue, name);
    if (manifest.seats[resolved]) return manifest.seats[resolved];
    const record = declaredSeat(catalogue, resolved);
    return record && record.declaredBy !== manifest.name ? record : undefined;
  };
  const unknownSeat = (name: string, field: string): Decision => {
    // The closest seat this manifest or the catalogue declares, or an alias names: most often a typo.
    const near = closestName(name, [...Object.keys(manifest.seats), ...seatNames(catalogue), ...everyAlias(catalogue).map(([old]) => old)]);
    const typo = near === undefined ? "" : ` (did you mean ${near}?)`;
    return refuse("unknown-seat", `seat "${name}" is declared neither by this manifest nor by any registered module${typo}: register its declarer first, or declare it here`, field);
  };

  for (const [i, seat] of manifest.claims.entries()) {
    if (!lookup(seat)) return unknownSeat(seat, `manifest.claims.${i}`);
  }
  for (const [i, use] of manifest.uses.entries()) {
    const tool = toolUseOf(use);
    if (tool === null) {
      if (!lookup(use)) return unknownSeat(use, `manifest.uses.${i}`);
      continue;
    }
    const refused = toolUseRefusal(catalogue, manifest, use, tool, `manifest.uses.${i}`);
    if (refused) return refused;
  }
  for (const [i, follow] of manifest.follows.entries()) {
    const declaration = lookup(follow.seat);
    if (!declaration) return unknownSeat(follow.seat, `manifest.follows.${i}.seat`);
    if (!declaration.emits.includes(follow.event)) {
      const emits = declaration.emits.length === 0 ? "nothing" : declaration.emits.join(", ");
      return refuse("unknown-event", `seat "${follow.seat}" does not emit "${follow.event}" (it emits ${emits})`, `manifest.follows.${i}.event`);
    }
  }
  return undefined;
}

/** R74: a tool use names a tool that is offered now: this manifest's own, else a registered module's; `unknown-tool` else. */
function toolUseRefusal(catalogue: Catalogue, manifest: Manifest, use: string, tool: { module: string; tool: string }, field: string): Decision | undefined {
  const offered = tool.module === manifest.name ? manifest.tools : moduleOf(catalogue, tool.module)?.manifest.tools;
  if (offered === undefined) {
    return refuse("unknown-tool", `"${use}" names module "${tool.module}", which is not registered: register it first, or drop the use`, field);
  }
  if (!offered.some((t) => t.name === tool.tool)) {
    const tools = offered.length === 0 ? "none" : offered.map((t) => t.name).join(", ");
    return refuse("unknown-tool", `"${use}": module "${tool.module}" offers no tool "${tool.tool}" (it offers ${tools})`, field);
  }
  return undefined;
}

/**
 * What `module.register` answers: the module, its version and the seats it declares and claims;
 * `replaced`: the version a new one replaced (absent on a first registration and when unchanged).
 * The server adds `unchanged: true` when the identical manifest was registered already.
 */
export type ModuleRegisterReply = BodyOf<"module.register">;

/**
 * The registered module as the commit recorded it, or, for an unchanged registration (no events),
 * as the state holds it under `entity`.
 */
export function reply(state: State, events: readonly MeshEvent[], _tools?: unknown, entity?: Entity): ModuleRegisterReply {
  const registered = events.find((e) => e.type === "ModuleRegistered");
  const recorded = registered?.type === "ModuleRegistered" ? registered : undefined;
  const manifest = recorded?.manifest ?? (entity ? moduleOf(state.modules, entity.id)?.manifest : undefined);
  if (!manifest) throw new Error("module.register reply: the commit has no ModuleRegistered and the module is not registered");
  const answer: ModuleRegisterReply = { module: manifest.name, version: manifest.version, declares: Object.keys(manifest.seats).sort(), claims: manifest.claims };
  if (recorded?.replaces !== undefined) answer.replaced = recorded.replaces;
  return answer;
}

export const moduleRegister = command("module.register", {
  secretsNeeded: () => 0,
  decide,
  reply,
});
