/**
 * The host agent's plan, apart from its effects (issue 12): what a message is, what applying a
 * declaration takes (its own credential first, the files, then the user list or why not), what
 * an assembled user list comes to, and every report the agent publishes. Pure: no bus, no files,
 * no clock, no crypto. agent.ts carries a plan out (opens secrets, writes files, installs the
 * list, acknowledges, publishes) and hands what happened back to the functions here.
 */
import { keysOfListText, usersOfListText } from "./declaration.ts";
import { shortDigest, Declaration as HostDeclaration, declarationProblem, type NodeSelf } from "../contracts/declaration.ts";
import type { HostReport, ServerListOutcome } from "../contracts/report.ts";
import { declarationSubject, isUserListPartOf } from "../names.ts";

/**
 * Milliseconds to wait before connection attempt `attempt + 1` after attempt `attempt` (1-based)
 * failed: `initialMs` doubled per attempt, at most `maxMs`, times a jitter of 0.75 to 1.25 from
 * `random` (0 to 1; 0.5, the default, is none), and again at most `maxMs`: a fleet refused at once
 * does not redial at once, at its ceiling too.
 */
export function backoffDelay(attempt: number, initialMs: number, maxMs: number, random = 0.5): number {
  const base = Math.min(maxMs, initialMs * 2 ** Math.min(attempt - 1, 20));
  return Math.round(Math.min(maxMs, base * (0.75 + random / 2)));
}

/**
 * R32 R55: the report to send when `unsent`, an earlier report the REPORTS stream has not stored
 * yet, is replaced by `next` (the stream keeps one per node): `next`, carrying the files `unsent`
 * said had drifted, so drift found while cut off is not lost to the next declaration's report.
 */
export function carryUnsent(unsent: HostReport | undefined, next: HostReport): HostReport {
  if (!unsent?.drift?.length) return next;
  return { ...next, drift: [...new Set([...unsent.drift, ...(next.drift ?? [])])].sort() };
}

/**
 * R32 R60: the longest pause, in milliseconds, between a report's attempts to reach the REPORTS
 * stream. A push waits for a node's stored report, and the next push repairs a server the broker
 * holder's stored report names as missed; a report waiting out the connection's 30 s bound landed
 * after both (a cluster whose restarted server left JetStream slow for a while: seen in
 * clusterUp's R60 test at load 5). A report is one small message: trying it every 2 s costs little.
 */
export const REPORT_RETRY_MAX_MS = 2_000;

/** Milliseconds before a report's attempt `attempt + 1` (1-based): the host's backoff, at most REPORT_RETRY_MAX_MS. */
export function reportRetryDelay(attempt: number, initialMs: number, maxMs: number): number {
  return backoffDelay(attempt, initialMs, Math.min(maxMs, REPORT_RETRY_MAX_MS));
}

/**
 * R1: the longest pause, in milliseconds, between the connection attempts of a host the bus never
 * admitted (it applied no declaration yet): a new node's agent is refused until the push that
 * composes its key, and that push waits for its report (10 s by default, `mesh push --wait`); at
 * the usual 30 s bound the report came after the wait. A push names it when a first declaration
 * timed out.
 */
export const NEW_NODE_BACKOFF_MAX_MS = 5_000;

/**
 * The bound of a host's backoff between connection attempts: `maxMs` once the bus admitted it (or
 * it applied a declaration before, in an earlier run), else at most NEW_NODE_BACKOFF_MAX_MS.
 */
export function backoffBound(maxMs: number, admitted: boolean): number {
  return admitted ? maxMs : Math.min(maxMs, NEW_NODE_BACKOFF_MAX_MS);
}

/**
 * A message from the node's CONTROL consumer: its declaration, or a part of a user list (the filter
 * brings both), or `foreign`: any other subject, which the consumer never brings but a principal can
 * (the bus delivers a pulled JetStream message to any reply subject, keeping its stored subject, R65).
 */
export function messageKind(subject: string, node: string): "declaration" | "part" | "foreign" {
  if (subject === declarationSubject(node)) return "declaration";
  return isUserListPartOf(subject, node) ? "part" : "foreign";
}

/** The first line of an error's message (a report or log line is one line, never a stack). */
export function firstLine(error: unknown): string {
  return error instanceof Error ? error.message.split("\n")[0]! : String(error);
}

/**
 * A declaration message's JSON (undefined when it was not JSON) read with the declaration contract
 * (src/contracts/declaration.ts), or the report that says why not: another contract version, naming
 * `v`, or malformed, naming its fields (acknowledged and reported, never retried).
 */
export function readDeclaration(raw: unknown, seq: number, node: string): { ok: true; declaration: HostDeclaration } | { ok: false; report: HostReport } {
  const parsed = HostDeclaration.safeParse(raw);
  if (parsed.success) return { ok: true, declaration: parsed.data };
  const digest = String((raw as { digest?: unknown } | undefined)?.digest ?? "unknown");
  return { ok: false, report: { node, digest, ok: false, error: `declaration #${seq} ${declarationProblem(parsed.error)}` } };
}

/** The user list a declaration names: its digest, size in bytes and part count. */
export type NamedList = { digest: string; bytes: number; parts: number };

/**
 * What applying one declaration takes, in order: refuse it (another node's); else adopt the
 * node's own credential when it carries one (before any user list: this node may hold the broker,
 * and its reload drops the connection, which must come back with the new key); apply the
 * files (R29); then the user list: none (every stored part is discarded), `no-bus` (this node
 * holds mesh-broker but the host was given no bus to reload: an error after the files), or the
 * list to assemble from its parts.
 */
export type ApplyPlan =
  | { ok: false; error: string }
  | { ok: true; adopt?: NodeSelf; list: { kind: "none" } | { kind: "no-bus"; error: string } | { kind: "assemble"; ref: NamedList } };

/** Plans applying `declaration` on `node` (ApplyPlan); `hasBus`: the host was given a bus to reload. */
export function planApply(declaration: HostDeclaration, node: string, seq: number, hasBus: boolean): ApplyPlan {
  if (declaration.node !== node) return { ok: false, error: `declaration #${seq} is for node ${declaration.node}, not ${node}` };
  const ref = declaration.userList;
  const list: Extract<ApplyPlan, { ok: true }>["list"] = ref === undefined
    ? { kind: "none" }
    : hasBus
      ? { kind: "assemble", ref }
      : { kind: "no-bus", error: "this node holds mesh-broker but the host has no bus to reload: start it with --bus-include, --bus-config, --bus-pid and --bus-monitor" };
  return { ok: true, ...(declaration.self ? { adopt: declaration.self } : {}), list };
}

/** A user list joined from its stored parts, or why not (UserListParts.assemble). */
export type AssembledList =
  | { ok: true; text: string }
  | { ok: false; code: "missing-parts"; missing: number[]; message: string }
  | { ok: false; code: "wrong-digest" | "wrong-size"; message: string };

/**
 * What an assembled list comes to: `install` its text (then every stored part is discarded);
 * `await-parts` (the declaration stays pending and is applied again when the last missing part
 * arrives; parts of other lists are discarded, R32 reports the missing ones); `refuse` (the parts
 * disagree with the declaration: they are discarded and the declaration is not pending).
 */
export function planList(assembled: AssembledList, ref: NamedList):
  | { kind: "install"; text: string }
  | { kind: "await-parts"; missing: number[]; keep: string; error: string }
  | { kind: "refuse"; discard: string; error: string } {
  if (assembled.ok) return { kind: "install", text: assembled.text };
  if (assembled.code === "missing-parts") return { kind: "await-parts", missing: assembled.missing, keep: ref.digest, error: assembled.message };
  return { kind: "refuse", discard: ref.digest, error: assembled.message };
}

/**
 * R43: the records' sequence a declaration was composed from and the controller's tag on it, carried
 * back as they came in every report about it (the host cannot make a tag, nor needs to read one).
 */
function fromOf(declaration: { recordsSequence?: number | undefined; recordsTag?: string | undefined }): { recordsSequence?: number; recordsTag?: string } {
  return {
    ...(declaration.recordsSequence === undefined ? {} : { recordsSequence: declaration.recordsSequence }),
    ...(declaration.recordsTag === undefined ? {} : { recordsTag: declaration.recordsTag }),
  };
}

/** The report of a declaration applied (R32): its digest, `ok`, the records' sequence and, with a list installed, the list's users and their keys (R44, R64). */
export function appliedReport(node: string, declaration: HostDeclaration, listText?: string): HostReport {
  return { node, digest: declaration.digest, ok: true, ...fromOf(declaration), ...(listText === undefined ? {} : { users: usersOfListText(listText), keys: keysOfListText(listText) }) };
}

/** The report of a declaration not applied (R32): its error's first line and, when parts are missing, which. */
export function failedReport(node: string, declaration: HostDeclaration, error: unknown, missingParts?: number[]): HostReport {
  return { node, digest: declaration.digest, ok: false, error: firstLine(error), ...fromOf(declaration), ...(missingParts ? { missingParts } : {}) };
}

/**
 * R43 R44: the report a host restates once per start, of what it holds: the last declaration it
 * applied (`owned`, null when none or another node's: nothing to restate) and, on the broker's
 * node, the users of the list the bus runs (`listText`).
 */
export function restatedReport(node: string, owned: { node: string; digest: string; recordsSequence?: number; recordsTag?: string } | null, listText?: string): HostReport | null {
  if (owned === null || owned.node !== node) return null;
  return { node, digest: owned.digest, ok: true, ...fromOf(owned), ...(listText === undefined ? {} : { users: usersOfListText(listText), keys: keysOfListText(listText) }) };
}

/**
 * R55: the report of a re-check that found drift: the last applied declaration's report with
 * `drift` naming the files written back (any earlier `drift` replaced), and its log line (the first
 * ten files named).
 */
export function driftedReport(node: string, last: HostReport, drift: readonly string[], when: "start" | "interval"): { report: HostReport; line: string } {
  const { drift: _previous, ...report } = last;
  const shown = drift.slice(0, 10).join(", ") + (drift.length > 10 ? `, and ${drift.length - 10} more` : "");
  return {
    report: { ...report, drift: [...drift] },
    line: `host ${node}: re-check (${when}): ${drift.length} file(s) of declaration ${shortDigest(report.digest)} had drifted and were written back: ${shown}`,
  };
}

/**
 * Whether a declaration's own credential (user, opened secret, pin) differs from the one the host
 * dials with, so it must be saved (a rotation, R50). The pin stays the host's when the declaration
 * names none.
 */
export function credentialChanged(now: { user: string; secret: string; fingerprint?: string | undefined }, next: { user: string; secret: string; fingerprint?: string | undefined }): boolean {
  return !(now.user === next.user && now.secret === next.secret && (now.fingerprint ?? "") === (next.fingerprint ?? ""));
}

/**
 * R50 R64: which seed a (re)connect attempt presents while a rotation may be under way. `pending`
 * is the pending seed (`node.seed.next`) or undefined; `preferPending` is what the bus's last
 * refusal said (seedAfterRefusal). Without a pending seed (or one equal to the current) the current
 * seed, and no preference carried into the next rotation. Returns the seed, whether it is the
 * pending one, and the preference to keep.
 */
export function presentedSeed(current: string, pending: string | undefined, preferPending: boolean): { seed: string; isPending: boolean; preferPending: boolean } {
  if (pending === undefined || pending === current) return { seed: current, isPending: false, preferPending: false };
  return preferPending ? { seed: pending, isPending: true, preferPending } : { seed: current, isPending: false, preferPending };
}

/**
 * R50: the preference after the bus refused the seed an attempt presented: the other one. Only a
 * refusal turns it: an attempt that failed before authorization (a TLS timeout) says nothing of
 * which key the bus's list holds.
 */
export function seedAfterRefusal(presentedPending: boolean): boolean {
  return !presentedPending;
}

/**
 * One server's outcome of installing a user list, as the host logs it: the report's outcome of a
 * server (ServerListOutcome: `ok` false when it missed it, R60, `error` saying why; `changed`
 * when the file was written and the bus reloaded it), its `server` absent on a bus of one server,
 * and the reload's `reloadMs`.
 */
export type ListInstallOutcome = Omit<ServerListOutcome, "server"> & { server?: string; reloadMs?: number };

/**
 * The host's log words for a user list on every server it went to, from all their outcomes (R60):
 * one server `user list reloaded in <ms> ms` or `user list unchanged`; a cluster `user list
 * installed on <server> (reloaded in <ms> ms), unchanged on <servers>, missed on <servers>`, in
 * server order within each. Empty when no list was installed. Pure.
 */
export function listOutcomeText(outcomes: readonly ListInstallOutcome[]): string {
  const [only] = outcomes;
  if (only === undefined) return "";
  if (outcomes.length === 1 && only.server === undefined) return only.changed ? `user list reloaded in ${only.reloadMs} ms` : "user list unchanged";
  const named = (o: ListInstallOutcome) => o.server ?? "the bus";
  const installed = outcomes.filter((o) => o.ok && o.changed !== false).map((o) => `${named(o)}${o.reloadMs === undefined ? "" : ` (reloaded in ${o.reloadMs} ms)`}`);
  const unchanged = outcomes.filter((o) => o.ok && o.changed === false).map(named);
  const missed = outcomes.filter((o) => !o.ok).map(named);
  const parts = [
    installed.length > 0 ? `installed on ${installed.join(", ")}` : "",
    unchanged.length > 0 ? `unchanged on ${unchanged.join(", ")}` : "",
    missed.length > 0 ? `missed on ${missed.join(", ")}` : "",
  ].filter((part) => part !== "");
  return `user list ${parts.join(", ")}`;
}
