/**
 * The `replay` verb as the controller serves it (one of serveCommands' shell verbs; the decisions are
 * pure, in src/commands/replay.ts): a report of the records folded from sequence 1 ignoring
 * snapshots (R44), or an operator's voiding commit (R45) appended past the commit the fold stopped
 * at, which transact cannot do. Served even while the records hold a commit no fold can read.
 */
import { createHash } from "node:crypto";
import type { NatsConnection } from "@nats-io/transport-node";
import { InvalidEvent, RecordsBehind, RecordsUnsafe, replay, type Catalogue } from "../records/catalogue.ts";
import { canonicalJson } from "../projections/canonical.ts";
import { packState } from "../projections/pack.ts";
import { assignedModules, everyCredential, everyModule, nodeCount, seatNames, type State } from "../projections/index.ts";
import type { FreshSecret, Refusal, Reply } from "../commands/envelope.ts";
import { withoutSecrets, type ShellHandler } from "../serve/server.ts";
import { commandRequest, type CommandRequest } from "../records/reuse.ts";
import type { TransactResult } from "../records/catalogue.ts";
import {
  REPLAY_VERB, ROTATIONS_PER_COMMIT, decideAcceptRestore, decideRestoreRotations, decideVoid, restorePrincipals, restoreSecretsNeeded, absentFromInstalledList,
} from "../commands/replay.ts";
import type { Principal } from "../events/index.ts";
import type { CredentialRevoked, CredentialRotated, MeshEvent, ProvisionRotated } from "../events/index.ts";
import { newFreshSecret } from "../crypto/secrets.ts";
import { busUser } from "../names.ts";
import type { ControllerLog } from "./log.ts";
import type { InstalledList } from "./reportWatch.ts";
import { composeBusUsers } from "../compose/index.ts";
import type { ComposeConfig } from "../compose/types.ts";

/** The SHA-256 (hex) of the state's canonical JSON, packed (projections/pack.ts): equal states, equal digests (R41). */
export function stateDigest(state: State): string {
  return createHash("sha256").update(canonicalJson(packState(state))).digest("hex");
}

/** What the records hold, counted (a replay's report). */
export function countsOf(state: State): Record<string, number> {
  return {
    nodes: nodeCount(state.nodes),
    modules: everyModule(state.modules).length,
    seats: seatNames(state.modules).length,
    credentials: everyCredential(state.credentials).length,
    assignments: assignedModules(state.assignments).reduce((n, [, nodes]) => n + nodes.length, 0),
  };
}

/**
 * The report of a fold from sequence 1, ignoring snapshots (R44): `valid` (every commit folds,
 * voided ones skipped), `lastSequence`, `digest`, `counts`, and `stoppedAt` (sequence, event
 * types, one-line reason) when a commit stops the fold. `matchesServing` says whether the state the
 * controller serves from (snapshot + tail) is the same state, byte for byte (R41); `behind` is the
 * world's evidence that the records are behind it (R43), absent when there is none; `unsafe`
 * (the setting and the whole line with its fix) when the stream erases commits or erased some
 * (R47): then the fold from sequence 1 is not `valid`, whatever it read.
 */
export async function replayReport(nc: NatsConnection, catalogue: Catalogue): Promise<Record<string, unknown>> {
  await catalogue.catchUp().catch((error: unknown) => {
    if (!(error instanceof InvalidEvent || error instanceof RecordsBehind || error instanceof RecordsUnsafe)) throw error;
  });
  const unsafe = catalogue.unsafe;
  const behind = {
    ...(catalogue.behind === null ? {} : { behind: catalogue.behind }),
    ...(unsafe === null ? {} : { unsafe: { setting: unsafe.setting, message: unsafe.message } }),
  };
  let state: State;
  try {
    state = await replay(nc);
  } catch (error) {
    if (!(error instanceof InvalidEvent)) throw error;
    return {
      valid: false,
      lastSequence: catalogue.state.sequence,
      stoppedAt: { sequence: error.sequence, types: error.types, reason: error.message },
      counts: countsOf(catalogue.state),
      ...behind,
      changed: false,
    };
  }
  const digest = stateDigest(state);
  return {
    valid: unsafe === null,
    lastSequence: state.sequence,
    digest,
    counts: countsOf(state),
    matchesServing: digest === stateDigest(catalogue.state),
    ...behind,
    changed: false,
  };
}

/** Principals absent from the installed list that an accepted restore's reply names (R59: its size stays bounded). */
export const ABSENT_IN_REPLY = 500;

/** What replayVerb needs from the controller. */
export type ReplayDependencies = {
  nc: NatsConnection;
  catalogue: Catalogue;
  log: ControllerLog;
  now(): Date;
  newId(): string;
  /** Seals a fresh password with the mesh key (for the records). */
  sealSecret(password: string): string;
  /** Opens a mesh-key-sealed secret (to seal a node's fresh password to the node for the reply). */
  openSecret(sealed: string): string;
  /**
   * The list the bus runs, as the broker's holder in `state` last reported it (undefined: no such
   * report; watchReports' installedListOf): its users (named when a restore is accepted) and their
   * keys (a node's key after a restore, R44, R64). Only a holder of mesh-broker in the records
   * being accepted is asked: no other node's word names a key.
   */
  installedList?(state: State): InstalledList | undefined;
  /** To compose the user list the accepted records give (the users they know). */
  compose?: ComposeConfig;
};

/**
 * The shell's `replay` verb: `{}` answers replayReport (nothing changes); `{void, reason}` appends
 * the CommitVoided decideVoid decides (refusals as it says) and answers its sequence and what the
 * fold holds next (null when the records fold to their end again). `dryRun: true` with a void or
 * an accept-restore runs the same decide and appends nothing: the reply is a command's dry run
 * (dryRunReplyOf); a bare report takes no dry run (it changes nothing), refused naming dryRun.
 */
export function replayVerb(deps: ReplayDependencies): ShellHandler<"replay"> {
  return async (request, { actor, commandId: givenId, dryRun }): Promise<Reply> => {
    const commandId = givenId ?? deps.newId();
    // R53: what this id is used for, recorded with the commit like every command's.
    const recorded = commandRequest(REPLAY_VERB, request);
    if (request.acceptRestore === true) {
      if (request.void !== undefined || request.reason !== undefined) {
        return { ok: false, error: { code: "invalid-request", field: "acceptRestore", message: "accept a restore and void a commit in two commands" } };
      }
      return dryRun === true ? dryRunRestore(deps, commandId, actor, recorded) : acceptRestore(deps, commandId, actor, recorded);
    }
    if (request.void === undefined && request.reason === undefined) {
      if (dryRun === true) {
        return { ok: false, error: { code: "invalid-request", field: "dryRun", message: "a replay report changes nothing: dry-run a --void or an --accept-restore, or leave dryRun out" } };
      }
      return { ok: true, ...(await replayReport(deps.nc, deps.catalogue)) };
    }
    const envelope = { commandId, actor, now: deps.now().toISOString(), secrets: [] };
    const decide = (held: Parameters<typeof decideVoid>[0]) => decideVoid(held, request, envelope);
    if (dryRun === true) return dryRunReplyOf(commandId, await deps.catalogue.appendPastHeld(commandId, decide, recorded, { dryRun: true }));
    const result = await deps.catalogue.appendPastHeld(commandId, decide, recorded);
    if (!result.ok) return { ok: false, error: result.refusal };
    const next = deps.catalogue.held;
    deps.log.info(`replay: ${actor} voided the commit at sequence ${request.void ?? "?"} (commit ${result.sequence}): ${request.reason ?? ""}`);
    return {
      ok: true,
      commandId,
      duplicate: result.duplicate,
      sequence: result.sequence,
      voided: request.void,
      lastSequence: deps.catalogue.state.sequence,
      stoppedAt: next === null ? null : { sequence: next.sequence, types: next.types, reason: next.message },
      changed: !result.duplicate,
    };
  };
}

/**
 * A replay's dry run as every command's (src/serve/server.ts dryRunOf, the DryRunReply
 * contract): `{ ok, dryRun: true, commandId, wouldAppendAfter, events }` with every hash, password
 * and sealed secret taken out (R3); `duplicate: true` and no events for an id already applied;
 * the refusal the real request would get.
 */
export function dryRunReplyOf(commandId: string, result: TransactResult): Reply {
  if (!result.ok) return { ok: false, error: result.refusal };
  const base = { ok: true as const, dryRun: true, commandId, wouldAppendAfter: result.sequence };
  if (result.duplicate) return { ...base, duplicate: true, events: [] };
  return { ...base, ...(result.unchanged ? { unchanged: true } : {}), entity: result.entity, events: withoutSecrets(result.events) as Array<Record<string, unknown>> };
}

/**
 * `replay {acceptRestore: true, dryRun: true}`: the decide acceptRestore runs, on the same state,
 * evidence and lost range, and nothing appended or unlatched. The fresh secrets are placeholders
 * (the reply takes every secret out, R3). It shows the first commit: a mesh of more than
 * ROTATIONS_PER_COMMIT principals rotates the rest in further commits of CredentialRotated.
 */
async function dryRunRestore(deps: ReplayDependencies, commandId: string, actor: string, recorded: CommandRequest): Promise<Reply> {
  const at = deps.now().toISOString();
  const result = await deps.catalogue.acceptRestore(commandId, (state, evidence, lost) => {
    const secrets = Array.from({ length: restoreSecretsNeeded(state) }, (): FreshSecret => ({ seed: "", nkey: "", sealed: "" }));
    return decideAcceptRestore(state, evidence, lost, { commandId, actor, now: at, secrets }, deps.installedList?.(state)?.keys);
  }, recorded, { dryRun: true });
  return dryRunReplyOf(commandId, result);
}

/**
 * `replay {acceptRestore: true}` (R44): appends RecordsRestored and a fresh credential for every
 * principal restorePrincipals names (decideAcceptRestore), in one commit past the records' end
 * (and further commits of ROTATIONS_PER_COMMIT), and unlatches the controller. A node gets no
 * minted key (R64: its pair is generated on the node): its key is the one the list the bus ran
 * holds for it (the broker holder's last report, `keys`), a node missing from that list is
 * revoked, and without a report nodes keep their recorded keys (said in `nodeKeys`). Replies the
 * evidence, the lost range, the principals rotated and `revoked`, `unknownToRecords`: the users
 * on the broker's installed list that the accepted records do not know, and
 * `absentFromInstalledList`: the principals the records' list holds and the installed list lacks
 * (removed after the backup, say), each with why and what to run; their fresh credentials are
 * handed to nobody. The next push installs them all. The asking operator's own fresh credential
 * comes back with its seed (`credential`), as an operator's own `credential rotate` does (R50):
 * its CLI keeps it, the next push installs it.
 */
async function acceptRestore(deps: ReplayDependencies, commandId: string, actor: string, recorded: CommandRequest): Promise<Reply> {
  const asked: Asked = { commandId, actor, at: deps.now().toISOString(), recorded };
  const accepted = await acceptCommit(deps, asked);
  if (!accepted.result.ok) return { ok: false, error: accepted.result.refusal };
  const result = accepted.result;
  // A retried id decides nothing: the list is read over the records as accepted then.
  const installed = accepted.installed ?? deps.installedList?.(deps.catalogue.state);
  // The rest of the fresh credentials, a commit each batch (a retried id appends nothing twice).
  const further = result.duplicate ? [] : await rotateTheRest(deps, asked, accepted.all, installed?.keys);
  if (!Array.isArray(further)) return { ok: false, error: further.refusal };
  const events = [...result.events, ...further];
  const rotated = events.filter((e): e is CredentialRotated => e.type === "CredentialRotated");
  deps.log.info(`replay: ${actor} accepted the records as restored at sequence ${result.sequence}; ${rotated.length} credential(s) rotated, installed by the next push (R44)`);
  return restoreReply(deps, asked, result, events, installed);
}

/** How a restore was asked: the command id, the operator, the time stamped on its commits, and the request recorded with them (R53). */
type Asked = { commandId: string; actor: string; at: string; recorded: CommandRequest };

/**
 * The first commit of an acceptance (decideAcceptRestore): RecordsRestored and the first
 * ROTATIONS_PER_COMMIT fresh credentials, with every principal to rotate (`all`) and, R44 R64,
 * the list the bus ran, from the broker's holder in the records being accepted.
 */
async function acceptCommit(deps: ReplayDependencies, { commandId, actor, at, recorded }: Asked): Promise<{ result: TransactResult; all: Principal[]; installed: InstalledList | undefined }> {
  let all: Principal[] = [];
  let secrets: FreshSecret[] = [];
  let installed: InstalledList | undefined;
  const result = await deps.catalogue.acceptRestore(commandId, (state, evidence, lost) => {
    all = restorePrincipals(state);
    installed = deps.installedList?.(state);
    const needed = restoreSecretsNeeded(state);
    if (secrets.length < needed) secrets = [...secrets, ...freshSecrets(deps, needed - secrets.length)];
    return decideAcceptRestore(state, evidence, lost, { commandId, actor, now: at, secrets }, installed?.keys);
  }, recorded);
  return { result, all, installed };
}

/** `count` fresh secrets sealed with the mesh key. */
function freshSecrets(deps: ReplayDependencies, count: number): FreshSecret[] {
  return Array.from({ length: count }, () => newFreshSecret(deps.sealSecret));
}

/** The fresh credentials past the first commit, ROTATIONS_PER_COMMIT a commit (`<id>.rotate-<n>`); their events, or the first refusal. */
async function rotateTheRest(deps: ReplayDependencies, { commandId, actor, at, recorded }: Asked, all: Principal[], installedKeys: InstalledList["keys"] | undefined): Promise<MeshEvent[] | { refusal: Refusal }> {
  const further: MeshEvent[] = [];
  for (let from = ROTATIONS_PER_COMMIT, batch = 1; from < all.length; from += ROTATIONS_PER_COMMIT, batch += 1) {
    const slice = all.slice(from, from + ROTATIONS_PER_COMMIT);
    const id = `${commandId}.rotate-${batch}`;
    const batchSecrets = freshSecrets(deps, slice.length);
    const more = await deps.catalogue.transact(id, (state) => decideRestoreRotations(state, slice, { commandId: id, actor, now: at, secrets: batchSecrets }, installedKeys), recorded);
    if (!more.ok) return { refusal: more.refusal };
    further.push(...more.events);
  }
  return further;
}

/**
 * Principals the records hold and the installed list does not (removed after the backup, or
 * never pushed): freshly minted like all, but their credential is never handed out here. A node
 * revoked by this acceptance (the bus ran without it, R64) is absent too, though no longer on the
 * records' list. Sorted by kind, then name.
 */
function absentPrincipals(composedUsers: Parameters<typeof absentFromInstalledList>[0] | undefined, installedUsers: readonly string[] | undefined, actor: string, revoked: readonly Principal[]): { kind: string; name: string; user: string }[] {
  return [
    ...(composedUsers === undefined ? [] : absentFromInstalledList(composedUsers, installedUsers, actor)),
    ...revoked.map((p) => ({ kind: p.kind, name: p.name, user: busUser(p.kind, p.name) })),
  ].sort((a, b) => (a.kind === b.kind ? (a.name < b.name ? -1 : a.name > b.name ? 1 : 0) : a.kind < b.kind ? -1 : 1));
}

/** The reply to an accepted restore (see acceptRestore): what it appended, and what the world runs against what the records compose (R44). */
function restoreReply(deps: ReplayDependencies, { commandId, actor }: Asked, result: Extract<TransactResult, { ok: true }>, events: readonly MeshEvent[], installed: InstalledList | undefined): Reply {
  const restored = result.events.find((e) => e.type === "RecordsRestored");
  const rotated = events.filter((e): e is CredentialRotated => e.type === "CredentialRotated");
  const revoked = events.filter((e): e is CredentialRevoked => e.type === "CredentialRevoked").map((e) => e.principal);
  const provisions = events.filter((e): e is ProvisionRotated => e.type === "ProvisionRotated").map((e) => ({ seat: e.seat, provision: e.provision, consumer: e.consumer }));
  const state = deps.catalogue.state;
  // R44: what the world runs, from the broker holder's last report, against what the records compose.
  const composed = deps.compose === undefined ? undefined : composeBusUsers(state, deps.compose);
  const known = composed?.ok ? new Set(composed.users.map((u) => u.user)) : undefined;
  // Principals the world admits and the records do not know (enrolled after the backup, say).
  const unknownToRecords = known === undefined ? [] : (installed?.users ?? []).filter((u) => !known.has(u)).sort();
  const absent = absentPrincipals(composed?.ok ? composed.users : undefined, installed?.users, actor, revoked);
  // R50: the asking operator's fresh password, to its own inbox alone (R33) as `credential rotate`
  // answers an operator rotating its own: its CLI keeps it beside its credential file, prints none.
  const own = rotated.find((e) => e.principal.kind === "operator" && e.user === actor);
  const credential = own?.sealed === undefined ? {} : {
    credential: { address: own.address, user: own.user, fingerprint: state.mesh?.fingerprint ?? "", seed: deps.openSecret(own.sealed) },
  };
  return {
    ok: true,
    commandId,
    duplicate: result.duplicate,
    sequence: result.sequence,
    accepted: true,
    evidence: restored?.type === "RecordsRestored" ? restored.evidence : [],
    lost: restored?.type === "RecordsRestored" ? restored.lost : null,
    rotated: rotated.length > 1000 ? { count: rotated.length } : rotated.map((e) => e.principal),
    ...(revoked.length > 0 ? { revoked: revoked.length > 1000 ? { count: revoked.length } : revoked } : {}),
    freshProvisions: provisions.length > 1000 ? { count: provisions.length } : provisions,
    ...(installed?.keys === undefined ? { nodeKeys: "unchecked: no holder of mesh-broker reported the list the bus ran; each node keeps its recorded key" } : {}),
    unknownToRecords,
    ...(absent.length > ABSENT_IN_REPLY ? { absentLeftOut: absent.length - ABSENT_IN_REPLY } : {}),
    absentFromInstalledList: absent.slice(0, ABSENT_IN_REPLY).map((p) => ({
      ...p,
      why: "on the records' list but not on the list the bus runs: removed after the backup, or enrolled and never pushed",
      next: p.kind === "node"
        ? `its key is revoked (the bus ran without it): \`mesh node remove ${p.name}\` again if it was removed after the backup, or remove it and enrol it again with the new keys \`mesh host init --force\` makes on it, to let it back deliberately (R66: its old keys stay refused)`
        : `undo again what was done to it after the backup, or \`mesh credential rotate ${p.kind} ${p.name}\` to let it back deliberately`,
    })),
    ...credential,
    next: "run `mesh push --wait`: it installs the fresh credentials; the controller switches to its own at that push (R50)",
    changed: !result.duplicate,
  };
}
