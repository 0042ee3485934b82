/**
 * R73: rotation without a gap. A module credential rotated with `overlap` keeps its previous key
 * (projections/credentials.ts `previous`); the user list admits that key beside the new one, with
 * the same permissions, until every node the module is assigned to has reported the new one. The
 * reports are not records: the push reads each deciding node's last report and passes them in, so
 * composition stays a pure function of the state and those reports. Pure.
 */
import { credentialEntries, nodesOfModule, type CredentialRecord, type State } from "../projections/index.ts";
import { principalKey } from "../names.ts";
import type { BusUsers, Principal } from "./types.ts";

/**
 * One module's run state as a node reports it (R72, contracts/report.ts ModuleRun): its state
 * (`running`, `starting`, `exited`, `runtime-missing`, ...) and the nkey public key of the seed its
 * process was started with, when one runs.
 */
export type ModuleRun = { module: string; state: string; startedWithNkey?: string };

/**
 * What overlapEnded reads of a node's last report (contracts/report.ts HostReport): whether it
 * applied its declaration, the records sequence that declaration was composed at, and, when the
 * node runs modules (R72), each one's run state by module name (`modules`, unknown shape allowed:
 * read by runsOf alone).
 */
export type OverlapReport = { ok: boolean; recordsSequence?: number | undefined; modules?: unknown };

/**
 * Each node's last report by node, as the push read them; null when none is stored. A node absent
 * was not read (or its read failed): like a missing report, it ends no overlap.
 */
export type OverlapReports = ReadonlyMap<string, OverlapReport | null>;

/** States in which a module's process may still be connected with the key it started with. */
const LIVE_STATES: ReadonlySet<string> = new Set(["running", "starting", "stopping"]);

/**
 * The run states a report carries, by module, or `undefined` when it carries none (a node whose
 * agent runs no modules, or one from before R72), or `"unreadable"` when the field is not the shape
 * this release reads. The one place that knows the report's per-module shape (R72).
 */
function runsOf(report: OverlapReport): Map<string, ModuleRun> | "unreadable" | undefined {
  const modules = report.modules;
  if (modules === undefined) return undefined;
  if (!Array.isArray(modules)) return "unreadable";
  const runs = new Map<string, ModuleRun>();
  for (const run of modules as unknown[]) {
    if (run === null || typeof run !== "object") return "unreadable";
    const { module, state, startedWithNkey } = run as Record<string, unknown>;
    if (typeof module !== "string" || typeof state !== "string") return "unreadable";
    if (startedWithNkey !== undefined && typeof startedWithNkey !== "string") return "unreadable";
    runs.set(module, run as ModuleRun);
  }
  return runs;
}

/**
 * R73: whether `report` (a node's last) ends the overlap of `module`'s rotation at records sequence
 * `rotatedAt` onto public key `nkey`: the node applied (`ok`) a declaration composed at or past the
 * rotation (its env holds the new seed), and, when the report carries run states, the module is not
 * live with another key: live (`running`, `starting`, `stopping`) only with `startedWithNkey` equal to
 * `nkey`; not run by the agent (no entry), exited or runtime-missing, the new env applied is enough.
 * A live module whose report names no key, or run states of a shape this release cannot read, keep
 * the overlap (a running module is never cut off on a guess). No report (null or undefined): kept.
 */
export function overlapEnded(report: OverlapReport | null | undefined, module: string, rotation: { rotatedAt: number; nkey: string }): boolean {
  if (!report || !report.ok) return false;
  if (report.recordsSequence === undefined || report.recordsSequence < rotation.rotatedAt) return false;
  const runs = runsOf(report);
  if (runs === undefined) return true;
  if (runs === "unreadable") return false;
  const run = runs.get(module);
  if (run === undefined || !LIVE_STATES.has(run.state)) return true;
  return run.startedWithNkey === rotation.nkey;
}

/** The module a credential's overlap is about: its principal's name for a module's, else none (R73 speaks of modules). */
function moduleOfCredential(credential: CredentialRecord): string | undefined {
  return credential.principal.kind === "module" ? credential.principal.name : undefined;
}

/**
 * R73: the nodes whose report decides whether `credential`'s previous key is still admitted (the
 * nodes its module is assigned to, sorted), or an empty list when it has no previous key to admit.
 */
export function overlapNodesOf(state: State, credential: CredentialRecord): readonly string[] {
  const module = moduleOfCredential(credential);
  if (credential.previous === undefined || credential.nkey === undefined || module === undefined) return [];
  return nodesOfModule(state.assignments, module);
}

/**
 * R73: whether the user list admits `credential`'s previous key: it has one, and some node its
 * module is assigned to has not yet reported the new one (overlapEnded of that node's report in
 * `reports`). A module assigned nowhere has nothing running with the old key: not admitted.
 */
export function previousAdmitted(state: State, credential: CredentialRecord, reports: OverlapReports | undefined): boolean {
  const nodes = overlapNodesOf(state, credential);
  if (nodes.length === 0) return false;
  const module = moduleOfCredential(credential)!;
  const rotation = { rotatedAt: credential.previous!.rotatedAt, nkey: credential.nkey! };
  return nodes.some((node) => !overlapEnded(reports?.get(node), module, rotation));
}

/**
 * R73: every node whose last report a push reads before composing (sorted, once each): the nodes of
 * the modules whose credential keeps a previous key. Empty in a mesh that rotated no module.
 */
export function overlapNodes(state: State): string[] {
  const nodes = new Set<string>();
  for (const [, credential] of credentialEntries(state.credentials)) {
    if (credential.previous === undefined) continue;
    for (const node of overlapNodesOf(state, credential)) nodes.add(node);
  }
  return [...nodes].sort();
}

/**
 * R73: the principal keys (`module:<name>`, sorted) whose previous key the user list admits given
 * `reports`: a value a push's composition memo compares (equal text, equal list).
 */
export function openOverlaps(state: State, reports: OverlapReports | undefined): string[] {
  const open: string[] = [];
  for (const [, credential] of credentialEntries(state.credentials)) {
    if (credential.previous !== undefined && previousAdmitted(state, credential, reports)) open.push(principalKey(credential.principal.kind, credential.principal.name));
  }
  return open.sort();
}

/** R73: a principal whose previous key a composed list admits, until these nodes report the new one. */
export type OpenOverlap = { principal: Principal; until: string[] };

/** R73: the overlaps a composed user list holds open (its previous-key users), in list order. Pure. */
export function overlapsOfList(list: BusUsers): OpenOverlap[] {
  if (!list.ok) return [];
  return list.users.flatMap((u) => (u.overlap === undefined ? [] : [{ principal: { kind: u.principal.kind, name: u.principal.name }, until: [...u.overlap.until] }]));
}
