import { createHash, hash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { headers, type Msg, type MsgHdrs, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager, type PubAck } from "@nats-io/jetstream";
import type { Catalogue } from "../records/catalogue.ts";
import type { Envelope, Refusal } from "../commands/envelope.ts";
import { decideProvisionsMint } from "../commands/provisionsMint.ts";
import { decideDeclarationsSent } from "../commands/declarationsSent.ts";
import { decideBootstrapRotation } from "../commands/controllerCredential.ts";
import {
  USER_LIST_PART_BYTES, composeDeclarations, userListPartCount, type Declaration, type DeclarationResult, type ModuleLeftOut, type UserListRef,
} from "../compose/declaration.ts";
import { requiredProvisions } from "../compose/provisions.ts";
import { openOverlaps, overlapsOfList, type OpenOverlap, type OverlapReports } from "../compose/overlap.ts";
import type { ComposeConfig, LeftOut, Principal } from "../compose/types.ts";
import { CONTROLLER_PRINCIPAL, credentialOf, evolve, holdersOf, lastUserListSequence, provisionKey, type State } from "../projections/index.ts";
import { newFreshSecret, newPassword, openWithMeshKey, passwordMatches, recordsTag, secretMatches, sealToNode, sealWithMeshKey } from "../crypto/secrets.ts";
import {
  BROKER_SEAT, CONTROLLER_NAME, CONTROL_STREAM, REPORTS_STREAM, REPORT_SUBJECTS, USER_LIST_DIGEST_HEADER, USER_LIST_PART_HEADER,
  declarationSubject, nodeOfReportSubject, reportSubject, userListPartSubject, userListPartsFilter,
} from "../names.ts";
import { parseHostReport, type HostReport } from "../contracts/report.ts";
import { partHeaderValue } from "../contracts/userList.ts";
import { raiseMesh, type RaiseMemo, type RaiseReport } from "../controller/raise.ts";
import type { ControllerCredential } from "../controller/credential.ts";
import { BOOTSTRAP_NKEY, BOOTSTRAP_PASSWORD } from "../genesis.ts";
import { dialAgainAfter, retryJetStream } from "../bus/retry.ts";
import { total } from "../bus/total.ts";
import {
  awaitedNodes, composeAgain, firstDeclarations, freshProvisions, freshSince, judgeWait, rotationBrokers, planRound, reportsToRead, roundBound, settleRound,
  unappliedCounts, unconfirmedNodes, unknownNamed, userListUndelivered, withModulesLeftOut, type LastReported, type NodeReport, type PlannedSend, type ProvisionName,
  type RoundPlan,
} from "./plan.ts";
import { REPORT_READS_AT_ONCE, readLastReported, readOverlapReports } from "./reports.ts";

/**
 * Push (DESIGN.md "push", R5, R11, R12, R14, R21, R29..R32): mint what compositions need, compose
 * every node, send the named nodes and every node that is behind, record what was sent, and
 * optionally wait for each node's report of the applied digest.
 */


/** DeclarationSent events per commit: ~250 bytes each, so one commit stays far under 1 MiB. */
export const SENT_PER_COMMIT = 1000;
/** Acknowledged sends that start a DeclarationSent commit while a round still sends (SentRecorder). */
export const RECORD_BATCH = 250;
/** ProvisionMinted events per commit (~400 bytes each). */
export const MINTED_PER_COMMIT = 1000;
/**
 * Publishes in flight before waiting for their acks (pipelining). 256 keeps the bus busy; more only
 * queues on it: on nats-server 2.9.10 replacing a node's latest declaration costs ~2 ms with
 * 10,000 CONTROL consumers, and 2,048 in flight outlived the 5 s publish timeout.
 */
export const PUBLISH_WINDOW = 256;
/**
 * Publishes queued before the publishing loop yields (so nats.js writes them in one go) while the
 * window has room: small enough that the bus starts on the first ones while the next are sealed.
 */
export const PUBLISH_FLUSH = 32;
/** Entries a seal cache keeps before it is cleared. */
export const SEAL_CACHE_LIMIT = 200_000;
/** Pauses before the append of what a push sent is tried again (about 12 s in all: a cluster electing leaders, R62). */
export const RECORD_RETRY_DELAYS_MS: readonly number[] = [100, 250, 500, 1_000, 1_500, 2_500, 3_000, 3_000];
/** Default milliseconds `--wait` waits for reports. */
export const DEFAULT_WAIT_MS = 30_000;

/**
 * The time a push's waits for reports read (R32): `now` in milliseconds, and `sleep`, a pause that
 * `signal` cuts short (a report arrived). Tests pass a clock of their own to see how long a push
 * would wait without waiting it.
 */
export type WaitClock = { now(): number; sleep(ms: number, signal: AbortSignal): Promise<void> };

/** The system's clock and timers. */
export const SYSTEM_CLOCK: WaitClock = {
  now: () => Date.now(),
  sleep: (ms, signal) => sleep(ms, undefined, { signal }).catch(() => undefined),
};

/** Where push writes what it did. Lines never contain a password, hash or sealed secret (R3). */
export type PushLog = { info(line: string): void; error(line: string): void };

/** What push needs from the controller: the bus, the records, the mesh key, and its own credential. */
export type PushContext = {
  nc: NatsConnection;
  catalogue: Catalogue;
  /** The mesh key (base64 of 32 bytes): opens the records' secrets, seals fresh ones. */
  meshKey: string;
  compose: ComposeConfig;
  log: PushLog;
  now?: () => Date;
  newId?: () => string;
  /** The controller's own credential: rotated off the genesis key on the first push with a broker (R14), switched by any rotation of it (R50). */
  controller?: ControllerCredential;
  /** The clock of the waits for reports (default SYSTEM_CLOCK). */
  clock?: WaitClock;
  /** Called for progress on long pushes: `done` of `total` declarations sent. */
  progress?: (done: number, total: number) => void;
  /**
   * Node-sealed secrets kept across pushes, by node key and mesh-key form: a secret unchanged for a
   * node is sent in the form it was sent before instead of being sealed again (the controller keeps
   * one for its life; bounded by SEAL_CACHE_LIMIT).
   */
  sealCache?: Map<string, string>;
  /** What earlier raises verified (RaiseMemo): the controller keeps one for its life, so a push's raise reads only consumer names. */
  raiseMemo?: RaiseMemo;
  /** The last composition (CompositionMemo): the controller keeps one for its life, so a push over records that changed nothing composition reads composes nothing. */
  compositionMemo?: CompositionMemo;
  /**
   * R60: broker holders whose report, heard by this controller in a push, named a server that
   * missed the user list; the controller keeps one for its life. The next push sends them their
   * list again even when REPORTS never stored that report (the host's publish timed out while the
   * cluster moved leaders); a heard report with every server installed takes the holder off.
   */
  listRepairs?: Set<string>;
  /** When given, push adds the milliseconds each step took (raise, mint, compose, reports, seal, publish, record, wait). */
  timings?: Record<string, number>;
};

/** Caller settings of one push. */
export type PushOptions = {
  /** Nodes to send even when they are not behind (R31: the behind ones are sent too). */
  nodes?: readonly string[];
  /** Wait for each sent node's report of the applied digest (R32). */
  wait?: boolean;
  /**
   * Milliseconds the push waits for reports in all (default DEFAULT_WAIT_MS): its waits (the
   * broker's report in a round, a rotated controller key's confirmation, `wait`'s) share one
   * deadline, set when the first begins (R32).
   */
  timeoutMs?: number;
  /** Compose and report, secrets redacted; mint, raise and send nothing (the provisions a push would mint count in provisionsMinted). */
  dryRun?: boolean;
  /** This push's progress hook (the asker's progress lines); default ctx.progress. */
  progress?: (done: number, total: number) => void;
};

export type { NodeOutcome, NodeReport } from "./plan.ts";
export { userListUndelivered } from "./plan.ts";

/** What one push did (R12, R30, R32). */
export type PushReport = {
  pushId: string;
  dryRun: boolean;
  /** The records sequence the last round composed from. */
  recordsSequence: number;
  nodes: NodeReport[];
  /** Principals left out of the user list, and why (R12). */
  leftOut: LeftOut[];
  /**
   * Why no user list reached the bus, when none did: the list's own refusal (a list with no users,
   * R12), `no-broker-holder` (nothing holds mesh-broker) or `user-list-undelivered` (every holder's
   * declaration was refused or failed) (R49). The CLI exits non-zero when it is set.
   */
  userList?: Refusal;
  /**
   * Principals whose credential was rotated after the records sequence the broker's last user list
   * was composed from: this push's list is the first to carry their fresh credentials, and the bus
   * refuses their old keys once it is installed (R48, R50). Sorted by kind, then name.
   */
  freshCredentials: Principal[];
  /**
   * R73: principals (rotated modules) whose previous key this push's user list still admits beside
   * the new one, each with the nodes whose report of the new one ends that: the push after it drops it.
   */
  overlaps?: OpenOverlap[];
  /**
   * Provisions whose secret was rotated (a node removal, an accepted restore: R48, R44) and that
   * this push's declarations are the first to carry to a node receiving or granting them
   * (freshProvisions): the provider grants only the fresh secret once it applies. Sorted by key.
   */
  freshProvisions: ProvisionName[];
  /** Provisions minted before composing (R31). */
  provisionsMinted: number;
  /**
   * The controller switched to a rotated key of its own (R14, R50): `applied` once the broker
   * applied the list carrying it (the credential file then holds it), `pending` until then.
   */
  controllerRotation?: "applied" | "pending";
  raised: { created: number; updated: number; refused: RaiseReport["refused"] };
  /** Nodes that did not report within the wait (R32). */
  timedOut: string[];
  /** Compose-and-send rounds run; `boundHit` when the node-count bound stopped them (R31). */
  rounds: number;
  boundHit: boolean;
  /** Dry run only: each composition, secrets redacted. */
  declarations?: Declaration[];
  /**
   * R60, on a cluster: each server's outcome of the user list a broker holder applied in this push
   * (installed, or missed with why), in server order. A missed server is named here, and the next
   * push sends that holder its list again (its report as this controller heard it, listRepairs, or
   * as REPORTS stored it, missedServersOf), which repairs it.
   */
  servers?: ServerListLine[];
};

/** One server's outcome of a user list in a push report (R60), with the broker holder that installed it. */
export type ServerListLine = { node: string; server: string; ok: boolean; changed?: boolean; error?: string };


/**
 * R60: the holders among `holders` whose last stored report names a server that missed its user
 * list (`servers` with one not ok). A push sends them their declaration again even when it is not
 * behind, so the server that was down takes the list it missed. A holder with no stored report,
 * or one that does not parse, is not resent for this.
 */
export async function missedServersOf(jsm: JetStreamManager, holders: readonly string[]): Promise<Set<string>> {
  const missed = new Set<string>();
  await Promise.all(holders.map(async (node) => {
    // A server that just came back may leave JetStream answering late for a moment: retried.
    const stored = await retryJetStream(`reading ${node}'s last report`, () => jsm.streams.getMessage(REPORTS_STREAM, { last_by_subj: reportSubject(node) }))
      .catch(() => null);
    if (!stored) return;
    try {
      if (namesMissedServer(stored.json<HostReport>())) missed.add(node);
    } catch {
      // not a report
    }
  }));
  return missed;
}

/** R60: whether `report` names a server that missed the user list it carried. */
export function namesMissedServer(report: HostReport | undefined): boolean {
  return report?.servers?.some((server) => server.ok !== true) === true;
}

/** Texts longer than this are hashed from their UTF-8 bytes (see sha256). */
const HASH_AS_BYTES = 64 * 1024;

/**
 * sha256 hex of `text`'s UTF-8 bytes: the digest composition takes over canonical JSON and over a
 * user list. A long text (a user list of 50,000 users is 20 MiB) is encoded into a Buffer first:
 * Hash.update with a string that long took five times what encoding it and hashing the bytes take.
 */
export function sha256(text: string): string {
  // A short text (a declaration's canonical JSON) by crypto.hash: one call, no Hash object.
  if (text.length <= HASH_AS_BYTES) return hash("sha256", text, "hex");
  return createHash("sha256").update(Buffer.from(text, "utf8")).digest("hex");
}

const REDACTED = "[redacted]";

/**
 * A copy of a declaration with every secret redacted (sealed fields). The user list travels beside
 * the declaration, which names it by digest, size and part count only: no hash is in it.
 */
export function redactDeclaration(declaration: Declaration): Declaration {
  const walk = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(walk);
    if (value !== null && typeof value === "object") {
      const out: Record<string, unknown> = {};
      for (const [key, inner] of Object.entries(value)) out[key] = key === "sealed" || key === "password" || key === "seed" ? REDACTED : walk(inner);
      return out;
    }
    return value;
  };
  return walk(declaration) as Declaration;
}

/**
 * The declaration as sent to its node: every `sealed` secret (mesh-key form, as composed and
 * digested) opened and sealed again to the node's public key (sealToNode), so only that node opens
 * it. `opened` caches opened secrets across nodes of one push.
 */
export function sealForNode(
  declaration: Declaration,
  publicKey: string,
  meshKey: string,
  opened: Map<string, string>,
  cache?: Map<string, string>,
): Declaration {
  const reseal = (sealed: string): string => {
    const key = `${publicKey}|${sealed}`;
    const known = cache?.get(key);
    if (known !== undefined) return known;
    let secret = opened.get(sealed);
    if (secret === undefined) {
      secret = openWithMeshKey(meshKey, sealed);
      opened.set(sealed, secret);
    }
    const forNode = sealToNode(publicKey, secret);
    if (cache) {
      if (cache.size >= SEAL_CACHE_LIMIT) cache.clear();
      cache.set(key, forNode);
    }
    return forNode;
  };
  return {
    ...declaration,
    modules: declaration.modules.map((m) => ({
      ...m,
      credential: { ...m.credential, sealed: reseal(m.credential.sealed) },
      provisions: m.provisions.map((p) => ({ ...p, sealed: reseal(p.sealed) })),
    })),
    provisions: declaration.provisions.map((p) => ({ ...p, sealed: reseal(p.sealed) })),
  };
}

/** What composeDeclarations gives: the user list and every node's declaration. */
export type Composition = ReturnType<typeof composeDeclarations>;

/**
 * The last composition and what it was composed from (newCompositionMemo, composeRemembered).
 * A cache, not a record: it holds nothing the records do not give again.
 *
 * It rests on one assumption about every fold (evolve, startFold's draft and copy, and any fold
 * written later in their place): a fold never changes a state slice, or anything reachable from
 * one, in place. A slice an event touches comes out as a new object; a slice no event touched is
 * the same object, unchanged. A fold that changed a slice in place and kept its identity would
 * make this memo hand back the composition of records that are gone. A copy-on-write written by
 * hand must keep this too: the unit test "over a churning history folded every way the controller
 * folds ..." (test/unit/push.test.ts) compares the remembered composition with a fresh one after
 * every batch of a generated history, and fails on the first stale one.
 */
export type CompositionMemo = { last: { inputs: readonly unknown[]; composition: Composition } | null };

/** An empty CompositionMemo. */
export function newCompositionMemo(): CompositionMemo {
  return { last: null };
}

/**
 * Everything composition reads: the state's slices it derives from (not `sent`, `applied` or
 * `sequence`), the configuration and the digest function. A fold never changes a slice in place
 * (CompositionMemo's assumption): evolve copies on write (a slice no event touched is the same
 * object, one an event changed is a new one; projections/buckets.ts) and a long fold (startFold "copy") returns
 * objects of its own. So equal inputs, compared by identity, are the same records as far as
 * composition can see. A slice composition starts to read must be added here.
 */
function compositionInputs(state: State, config: ComposeConfig, digest: (text: string) => string, reports?: OverlapReports): unknown[] {
  // R73: the reports count only through the overlaps they leave open (a string: compared by value).
  return [state.mesh, state.nodes, state.modules, state.credentials, state.assignments, state.overlay, state.provisions, config, digest, openOverlaps(state, reports).join(" ")];
}

/**
 * composeDeclarations(state, config, sha256), or the memo's last composition when its inputs are
 * the same objects (compositionInputs): composition is a pure function of them, so it could only
 * give that result again. A push that recorded only what it sent (DeclarationSent folds into
 * `sent`) composes nothing the next time. Without a memo, composes.
 */
export function composeRemembered(memo: CompositionMemo | undefined, state: State, config: ComposeConfig, reports?: OverlapReports): Composition {
  const inputs = compositionInputs(state, config, sha256, reports);
  const last = memo?.last;
  if (last && last.inputs.length === inputs.length && last.inputs.every((input, i) => input === inputs[i])) return last.composition;
  const composition = composeDeclarations(state, config, sha256, reports);
  if (memo) memo.last = { inputs, composition };
  return composition;
}

/** Runs `step`, adding its milliseconds to `timings[name]` when timings are kept. */
async function timed<T>(timings: Record<string, number> | undefined, name: string, step: () => Promise<T> | T): Promise<T> {
  if (!timings) return step();
  const start = performance.now();
  try {
    return await step();
  } finally {
    timings[name] = (timings[name] ?? 0) + (performance.now() - start);
  }
}

/**
 * Mints every provision compositions need and the records lack (R31), in commits of
 * MINTED_PER_COMMIT: the secrets are made here (randomness is the shell's), the events decided by
 * decideProvisionsMint. Returns how many were minted.
 */
async function mintProvisions(ctx: PushContext, pushId: string, actor: string, now: string): Promise<number> {
  let minted = 0;
  const sealed = new Map<string, string>();
  for (let batch = 0; ; batch += 1) {
    const needed = requiredProvisions(ctx.catalogue.state).slice(0, MINTED_PER_COMMIT);
    if (needed.length === 0) return minted;
    for (const p of needed) {
      const key = provisionKey(p.seat, p.provision, p.consumer);
      if (!sealed.has(key)) sealed.set(key, sealWithMeshKey(ctx.meshKey, newPassword()));
    }
    const commandId = `${pushId}-provisions-${batch}`;
    const envelope: Envelope = { commandId, actor, now, secrets: [] };
    const result = await ctx.catalogue.transact(commandId, (state) => decideProvisionsMint(state, { pushId, sealed, limit: MINTED_PER_COMMIT }, envelope));
    if (!result.ok) {
      // no-secret: the records moved under the look above; look again (the next batch makes theirs).
      if (result.refusal.code === "no-secret") continue;
      return minted;
    }
    minted += result.events.length;
  }
}

/**
 * `state` with the provisions a push mints before composing (R31) folded in, and how many: the
 * dry run's own copy of the records, so it shows what the push would send rather than a
 * `provision-missing` refusal the push would not have. The same decision as mintProvisions, with
 * the redaction mark for secrets (a dry run redacts every secret anyway); nothing is appended.
 */
function withProvisionsMinted(state: State, pushId: string, envelope: Envelope): { state: State; count: number } {
  const needed = requiredProvisions(state);
  if (needed.length === 0) return { state, count: 0 };
  const sealed = new Map(needed.map((p) => [provisionKey(p.seat, p.provision, p.consumer), REDACTED]));
  const decision = decideProvisionsMint(state, { pushId, sealed, limit: needed.length }, envelope);
  if (!decision.ok) return { state, count: 0 };
  const commit = { commandId: envelope.commandId, entity: decision.entity, events: decision.events };
  return { state: evolve(state, [{ sequence: state.sequence + 1, commit }]), count: decision.events.length };
}

/**
 * R14: once a node holds mesh-broker, the controller's recorded credential must not be the
 * bootstrap one. Decides a CredentialRotated for the controller (same user) before composing, so
 * the user list sent carries it; adoptControllerCredential then stages it like any other rotation.
 * Returns true when it rotated.
 */
async function rotateBootstrap(ctx: PushContext, pushId: string, actor: string, now: string): Promise<boolean> {
  const state = ctx.catalogue.state;
  if (holdersOf(state, BROKER_SEAT).length === 0) return false;
  const principal = CONTROLLER_PRINCIPAL;
  const recorded = credentialOf(state.credentials, principal);
  if (!recorded || !isBootstrapCredential(recorded)) return false;
  const fresh = newFreshSecret((seed) => sealWithMeshKey(ctx.meshKey, seed));
  const commandId = `${pushId}-controller-rotation`;
  const envelope: Envelope = { commandId, actor, now, secrets: [] };
  const bootstrapKey = recorded.nkey ?? recorded.hash ?? "";
  const result = await ctx.catalogue.transact(commandId, (current) => decideBootstrapRotation(current, { bootstrapKey, fresh: { nkey: fresh.nkey, sealed: fresh.sealed } }, envelope));
  if (!result.ok) return false;
  ctx.log.info(`push ${pushId}: the controller's genesis key is replaced in the records by a key of its own; the broker's next user list carries it (R14)`);
  return true;
}

/**
 * True when the recorded controller credential is the well-known genesis key (R13): BOOTSTRAP_NKEY,
 * or the bootstrap password's hash of a mesh installed before nkeys (rotated onto a seed alike).
 */
function isBootstrapCredential(recorded: { nkey?: string | undefined; hash?: string | undefined }): boolean {
  if (recorded.nkey !== undefined) return recorded.nkey === BOOTSTRAP_NKEY;
  return recorded.hash !== undefined && passwordMatches(BOOTSTRAP_PASSWORD, recorded.hash);
}

/** Per controller credential: the recorded key (or hash) and the secret last found to match it (saves a check per push). */
const matched = new WeakMap<ControllerCredential, { key: string; password: string }>();

/**
 * R14 R50: the one way the controller switches to a new key of its own, whoever decided it
 * (the first push off the genesis key, `mesh credential rotate controller`, a node removal
 * that ended a copy of it, R48, a restore's fresh credentials). Run by every push before it
 * composes, while the bus still runs the list that admits the current key: when the records'
 * controller credential is not the key the controller dials with, its sealed secret is opened
 * with the mesh key and staged (ControllerCredential.stage: kept beside the credential file, tried
 * at reconnects in turn with the old one). The list this push sends to the broker carries the new
 * public key; when the broker reports it applied, the push commits the seed into the file
 * (confirmRotation). Only while a node holds mesh-broker: without one no list is installed, and
 * the old key stays good. Returns true when a rotation is pending after it (staged now or
 * before and not yet confirmed).
 */
async function adoptControllerCredential(ctx: PushContext, pushId: string, actor: string, now: string): Promise<boolean> {
  const controller = ctx.controller;
  if (!controller) return false;
  if (holdersOf(ctx.catalogue.state, BROKER_SEAT).length === 0) return controller.pending();
  await rotateBootstrap(ctx, pushId, actor, now);
  const recorded = credentialOf(ctx.catalogue.state.credentials, CONTROLLER_PRINCIPAL);
  if (!recorded) return controller.pending();
  const known = matched.get(controller);
  const current = controller.password();
  const key = recorded.nkey ?? recorded.hash ?? "";
  if ((known?.key === key && known.password === current) || secretMatches(current, recorded)) {
    matched.set(controller, { key, password: current });
    return controller.pending();
  }
  if (recorded.sealed === undefined) {
    ctx.log.error(`push ${pushId}: the records' controller credential holds no sealed seed: \`mesh credential rotate controller ${CONTROLLER_NAME}\``);
    return controller.pending();
  }
  const password = openWithMeshKey(ctx.meshKey, recorded.sealed);
  controller.stage(password);
  matched.set(controller, { key, password });
  ctx.log.info(`push ${pushId}: the records hold a new controller credential: staged before the list that refuses the old key is sent (R50)`);
  return true;
}

/**
 * The user list's UTF-8 bytes cut into parts of `partBytes` (default USER_LIST_PART_BYTES), in
 * order; userListPartCount(bytes) of them (an empty text is one empty part). Each part is a view
 * of one buffer: joined, they are the text's bytes exactly.
 */
export function splitUserList(text: string, partBytes: number = USER_LIST_PART_BYTES): Uint8Array[] {
  const bytes = Buffer.from(text, "utf8");
  const count = userListPartCount(bytes.length, partBytes);
  return Array.from({ length: count }, (_, index) => bytes.subarray(index * partBytes, Math.min(bytes.length, (index + 1) * partBytes)));
}

/** The headers of part `index` of `count` of the list whose digest is `digest` (USER_LIST_*_HEADER). */
export function userListPartHeaders(digest: string, index: number, count: number): MsgHdrs {
  const h = headers();
  h.set(USER_LIST_DIGEST_HEADER, digest);
  h.set(USER_LIST_PART_HEADER, partHeaderValue(index, count));
  return h;
}

/** A user list to send with a broker holder's declaration: what the declaration names, and the parts. */
export type UserListParts = { ref: UserListRef; parts: readonly Uint8Array[] };

/**
 * Cuts `text` into the parts `ref` names (splitUserList). Throws when the sizes disagree (the
 * composition and the shell must cut the same list the same way).
 */
export function userListParts(text: string, ref: UserListRef): UserListParts {
  const parts = splitUserList(text);
  const bytes = parts.reduce((sum, p) => sum + p.length, 0);
  if (parts.length !== ref.parts || bytes !== ref.bytes) {
    throw new Error(`the user list is ${bytes} bytes in ${parts.length} parts, its declaration names ${ref.bytes} in ${ref.parts}`);
  }
  return { ref, parts };
}

/** One declaration to send: its payload is made (sealed to the node) just before its publish; a broker holder's list parts go first. */
type Send = { node: string; digest: string; payload(): string; userList?: UserListParts };

/**
 * Publishes each declaration, pipelined: up to PUBLISH_WINDOW publishes in flight, the next one
 * sealed (CPU) while earlier ones are acknowledged (bus). A broker holder's user-list parts are
 * published before its declaration, on userListPartSubject(node, index) with the list's digest and
 * `<index>/<count>` in headers (one connection keeps them in order, so the host meets every part
 * before the declaration naming them); a node whose part or declaration failed is failed. Then the
 * parts older than the new list's first part are purged from the node's part subjects (a shorter
 * list leaves no stale tail behind; best effort, reported in `purgeErrors`).
 * Returns per node the error, if any; `refusedToSeal` collects the nodes whose secrets could not
 * be sealed (not published). `sent` hears each node without a list whose declaration the bus
 * acknowledged, as it is; `beforeList` is awaited before a user list is published.
 */
async function publishAll(
  js: JetStreamClient,
  jsm: JetStreamManager,
  sends: readonly Send[],
  refusedToSeal: Map<string, string>,
  options: {
    timings?: Record<string, number> | undefined;
    progress?: ((done: number, total: number) => void) | undefined;
    purgeErrors?: string[];
    sent?: (node: string, digest: string) => void;
    beforeList?: () => Promise<void>;
  } = {},
): Promise<Map<string, string>> {
  const { timings, progress, purgeErrors = [] } = options;
  const failures = new Map<string, string>();
  const all: Array<Promise<void>> = [];
  const firstPartSequence = new Map<string, number>();
  let done = 0;
  let sealMs = 0;
  const fail = (node: string) => (error: unknown) => {
    if (!failures.has(node)) failures.set(node, error instanceof Error ? error.message.split("\n")[0]! : String(error));
  };
  // The window: publishes in flight, and the wake-up of a loop waiting for room. The loop yields
  // only when the window is full or every PUBLISH_FLUSH publishes: nats.js writes what is queued
  // when the loop yields, so a yield per publish made one socket write per publish, and sealing
  // the next ones (CPU) could not run while the bus acknowledged the earlier ones.
  let inFlight = 0;
  let sinceYield = 0;
  let room: (() => void) | null = null;
  const settled = () => {
    inFlight -= 1;
    if (room && inFlight < PUBLISH_WINDOW) {
      const wake = room;
      room = null;
      wake();
    }
  };
  const track = (publish: Promise<void>): Promise<void> | undefined => {
    inFlight += 1;
    all.push(publish.finally(settled));
    if (inFlight >= PUBLISH_WINDOW) return new Promise<void>((resolve) => { room = resolve; });
    if (++sinceYield >= PUBLISH_FLUSH) {
      sinceYield = 0;
      return Promise.resolve();
    }
    return undefined;
  };
  for (const send of sends) {
    let payload: string;
    const sealStart = performance.now();
    try {
      payload = send.payload();
    } catch (error) {
      refusedToSeal.set(send.node, error instanceof Error ? error.message.split("\n")[0]! : String(error));
      continue;
    } finally {
      sealMs += performance.now() - sealStart;
    }
    if (send.userList) {
      await options.beforeList?.();
      const { ref, parts } = send.userList;
      for (let index = 0; index < parts.length; index += 1) {
        const published = js.publish(userListPartSubject(send.node, index), parts[index]!, { headers: userListPartHeaders(ref.digest, index, parts.length) });
        const wait = track(published.then(
          (ack: PubAck) => { if (index === 0) firstPartSequence.set(send.node, ack.seq); },
          fail(send.node),
        ));
        if (wait) await wait;
      }
    }
    const wait = track(js.publish(declarationSubject(send.node), payload).then(
      (_ack: PubAck) => { if (!send.userList) options.sent?.(send.node, send.digest); },
      fail(send.node),
    ).finally(() => {
      done += 1;
      if (progress && (done % 1000 === 0 || done === sends.length)) progress(done, sends.length);
    }));
    if (wait) await wait;
  }
  await Promise.all(all);
  for (const [node, seq] of firstPartSequence) {
    // nats-server 2.9.10 reads a purge `seq` of 0 or 1 as "no bound": it would take the new parts
    // too. A first part at sequence 1 has nothing older to purge anyway.
    if (failures.has(node) || seq <= 1) continue;
    try {
      await retryJetStream(`purging ${node}'s stale user-list parts`, () => jsm.streams.purge(CONTROL_STREAM, { filter: userListPartsFilter(node), seq }));
    } catch (error) {
      purgeErrors.push(`${node}: ${error instanceof Error ? error.message.split("\n")[0]! : String(error)}`);
    }
  }
  if (timings) timings.seal = (timings.seal ?? 0) + sealMs;
  return failures;
}

/**
 * Appends one DeclarationSent commit (R31) for `sent` (at most SENT_PER_COMMIT), entity push/<id>,
 * command id `commandId`. Returns its sequence. Throws when the append is refused or JetStream
 * stays unavailable.
 */
async function appendSent(
  ctx: PushContext,
  pushId: string,
  commandId: string,
  sent: ReadonlyArray<{ node: string; digest: string }>,
  recordsSequence: number,
  actor: string,
  now: string,
): Promise<number> {
  const input = { pushId, sent, recordsSequence };
  const envelope: Envelope = { commandId, actor, now, secrets: [] };
  // After the broker's reload a cluster's servers may answer JetStream late for seconds (leaders
  // moving, R62): the append is retried, with its command id, so it never lands twice.
  const result = await retryJetStream(`recording what push ${pushId} sent`,
    () => ctx.catalogue.transact(commandId, (state) => decideDeclarationsSent(state, input, envelope)),
    {
      delaysMs: RECORD_RETRY_DELAYS_MS,
      // Seen on a 2.9.10 cluster: after the reload that changed the controller's key, its
      // reconnected connection got no JetStream answers while core messages flowed; a fresh
      // connection does (dialAgainAfter).
      onRetry: (attempt) => { if (dialAgainAfter(attempt)) void ctx.nc.reconnect().catch(() => undefined); },
    });
  if (!result.ok) throw new Error(`push ${pushId}: recording sent declarations was refused: ${result.refusal.code}`);
  return result.sequence;
}

/**
 * Records what a round sent (R31) while it sends: each node whose declaration the bus acknowledged
 * is recorded as sent (DeclarationSent), in commits of up to SENT_PER_COMMIT appended one at a
 * time, as acknowledgements gather (a commit starts when RECORD_BATCH wait and no append runs), so
 * the records are appended while later declarations are in flight instead of after the last one.
 * `settle` waits for the appends running (before a user list goes out: the reload it brings fails
 * JetStream requests in flight); `finish` records every sent node not recorded yet, in commits
 * `<push>-sent-<round>-<n>`, and returns the sequences of all the round's commits, ascending. An
 * append that failed while sending is thrown by `settle` or `finish`.
 */
class SentRecorder {
  readonly #waiting: Array<{ node: string; digest: string }> = [];
  readonly #recorded = new Set<string>();
  readonly #sequences: number[] = [];
  #running: Promise<void> | null = null;
  #failed: { error: unknown } | null = null;
  #batch = 0;

  constructor(
    private readonly ctx: PushContext,
    private readonly pushId: string,
    private readonly round: number,
    private readonly recordsSequence: number,
    private readonly actor: string,
    private readonly now: string,
  ) {}

  /** `node` was sent `digest` and the bus acknowledged it. */
  sent(node: string, digest: string): void {
    this.#waiting.push({ node, digest });
    if (this.#running === null && this.#waiting.length >= RECORD_BATCH) this.#start();
  }

  #start(): void {
    const batch = this.#waiting.splice(0, SENT_PER_COMMIT);
    for (const s of batch) this.#recorded.add(s.node);
    this.#running = this.#append(batch).then(
      () => {
        this.#running = null;
        if (this.#failed === null && this.#waiting.length >= RECORD_BATCH) this.#start();
      },
      (error: unknown) => {
        this.#failed ??= { error };
        this.#running = null;
      },
    );
  }

  async #append(batch: ReadonlyArray<{ node: string; digest: string }>): Promise<void> {
    const commandId = `${this.pushId}-sent-${this.round}-${this.#batch++}`;
    this.#sequences.push(await appendSent(this.ctx, this.pushId, commandId, batch, this.recordsSequence, this.actor, this.now));
  }

  /** Waits until no append runs; throws the error of one that failed. */
  async settle(): Promise<void> {
    while (this.#running !== null) await this.#running;
    if (this.#failed !== null) throw this.#failed.error;
  }

  /** Records the sent nodes (`sent`: all the round sent) not recorded yet; the round's commit sequences, ascending. */
  async finish(sent: ReadonlyArray<{ node: string; digest: string }>): Promise<number[]> {
    await this.settle();
    this.#waiting.length = 0;
    const rest = sent.filter((s) => !this.#recorded.has(s.node));
    for (let start = 0; start < rest.length; start += SENT_PER_COMMIT) await this.#append(rest.slice(start, start + SENT_PER_COMMIT));
    return [...this.#sequences].sort((a, b) => a - b);
  }
}

/** Collects node reports (core subscription plus the REPORTS stream) and waits for expected digests. */
class ReportWatch {
  readonly #expected = new Map<string, string>();
  readonly #received = new Map<string, HostReport>();
  /** When the bus stored each received report (stored ones only; live ones are new by definition). */
  readonly #storedAt = new Map<string, string>();
  /**
   * Nodes sent by this push: a stored report of theirs counts only past `#from` (the REPORTS
   * stream's last sequence before the push sent anything), so a report made before the send, even
   * of the same digest, is never taken for this send's (R32).
   */
  readonly #fresh = new Set<string>();
  #from = 0;
  readonly #subscription: Subscription;
  readonly #jsm: JetStreamManager;
  readonly #clock: WaitClock;
  #wake: (() => void) | null = null;

  constructor(nc: NatsConnection, jsm: JetStreamManager, clock: WaitClock) {
    this.#jsm = jsm;
    this.#clock = clock;
    // R65: total; what is not a report (another subject, not JSON, another contract) is ignored
    // here, and said by the controller's own report watch (one bounded line), not once per push.
    const hear = total((m: Msg) => {
      const node = nodeOfReportSubject(m.subject);
      if (node !== null) this.#take(node, parseHostReport(m.json()));
    }, () => undefined);
    this.#subscription = nc.subscribe(REPORT_SUBJECTS, {
      callback: (error, m) => {
        if (!error) void hear(m);
      },
    });
  }

  /**
   * Takes `report`, heard on `node`'s report subject, when it is the expected digest. The bus lets
   * a node publish on its own report subject alone, so a body naming another node is nobody's
   * report (R32, R43): another node's word that this one applied is never taken.
   */
  #take(node: string, report: HostReport, stored?: { seq: number; time: Date }): void {
    if (report.node !== node || this.#expected.get(node) !== report.digest) return;
    if (stored !== undefined && this.#fresh.has(node) && stored.seq <= this.#from) return;
    this.#received.set(node, report);
    if (stored !== undefined) this.#storedAt.set(node, stored.time.toISOString());
    else this.#storedAt.delete(node);
    this.#wake?.();
  }

  /** Marks where the REPORTS stream ends before anything is sent: stored reports up to it are not fresh. */
  async markFrom(): Promise<void> {
    this.#from = await this.#jsm.streams.info(REPORTS_STREAM).then((i) => i.state.last_seq, () => 0);
  }

  /** Expects `digest` from `node`; `sent`: this push sent it, so only a report made after the send counts. */
  expect(node: string, digest: string, sent = true): void {
    this.#expected.set(node, digest);
    if (sent) this.#fresh.add(node);
    else this.#fresh.delete(node);
  }

  /** When the bus stored the received report of `node`, if it came from the stream. */
  storedAt(node: string): string | undefined {
    return this.#storedAt.get(node);
  }

  /**
   * The node's last stored report, when it says it applied `digest` (ok), with when it was stored;
   * else undefined. Does not count as received.
   */
  async appliedBefore(node: string, digest: string): Promise<string | undefined> {
    const stored = await this.#jsm.streams.getMessage(REPORTS_STREAM, { last_by_subj: reportSubject(node) }).catch(() => null);
    if (!stored) return undefined;
    try {
      const r = parseHostReport(stored.json());
      return r.node === node && r.digest === digest && r.ok === true ? stored.time.toISOString() : undefined;
    } catch {
      return undefined;
    }
  }

  report(node: string): HostReport | undefined {
    return this.#received.get(node);
  }

  missing(nodes: Iterable<string>): string[] {
    return [...nodes].filter((n) => !this.#received.has(n));
  }

  /**
   * Takes the latest stored report of each of `nodes` from the REPORTS stream now (a report of the
   * expected digest counts as received), so a node that reported long ago is not waited for.
   */
  async readStored(nodes: readonly string[]): Promise<void> {
    if (nodes.length > 0) await this.#fromStream(nodes);
  }

  /** Reads the latest stored report of each missing node from the REPORTS stream. */
  async #fromStream(nodes: readonly string[]): Promise<void> {
    // In batches: every unchanged node of a large mesh may be read here (R55), and thousands of
    // JetStream API requests at once would crowd out everything else on the controller's connection.
    for (let i = 0; i < nodes.length; i += REPORT_READS_AT_ONCE) {
      await Promise.all(nodes.slice(i, i + REPORT_READS_AT_ONCE).map(async (node) => {
        try {
          const stored = await this.#jsm.streams.getMessage(REPORTS_STREAM, { last_by_subj: reportSubject(node) });
          if (stored) this.#take(node, parseHostReport(stored.json()), stored);
        } catch {
          // no stored report
        }
      }));
    }
  }

  /**
   * Waits until every node in `nodes` reported its expected digest, or the clock reached `deadline`
   * (milliseconds on the watch's clock); returns the missing ones. A deadline already past reads
   * the stream once and waits no more.
   */
  async wait(nodes: readonly string[], deadline: number): Promise<string[]> {
    const clock = this.#clock;
    let nextStreamCheck = clock.now() + 1_000;
    for (;;) {
      const missing = this.missing(nodes);
      if (missing.length === 0) return [];
      const now = clock.now();
      if (now >= nextStreamCheck || now >= deadline) {
        await this.#fromStream(missing);
        nextStreamCheck = now + 2_000;
        const still = this.missing(nodes);
        if (still.length === 0 || clock.now() >= deadline) return still;
      }
      const woken = new AbortController();
      this.#wake = () => woken.abort();
      await clock.sleep(Math.max(1, Math.min(deadline, nextStreamCheck) - clock.now()), woken.signal);
      this.#wake = null;
    }
  }

  close(): void {
    this.#subscription.unsubscribe();
  }
}

/**
 * R78: the last reports a push's first round plans with (reportsToRead's nodes), with a log line
 * for the reads that failed (those nodes' reports have no say).
 */
async function firstRoundReports(ctx: PushContext, jsm: JetStreamManager, pushId: string, state: State, declarations: readonly DeclarationResult[], named: ReadonlySet<string>): Promise<LastReported> {
  const { reported, failed } = await readLastReported(jsm, reportsToRead(state, declarations, named));
  if (failed > 0) ctx.log.error(`push ${pushId}: the last report of ${failed} node(s) could not be read: they are re-sent only if behind by what they were sent (R78)`);
  return reported;
}

/** R78: the log line of the nodes a round re-sent for their last report alone, or null when none. */
function unappliedLine(pushId: string, sends: readonly PlannedSend[]): string | null {
  const counts = unappliedCounts(sends);
  const total = counts.failed + counts.older + counts.missing;
  if (total === 0) return null;
  return `push ${pushId}: re-sending ${total} node(s) whose last report is not their current declaration applied (R78): ${counts.failed} failed, ${counts.older} older, ${counts.missing} missing`;
}

/**
 * One push. Steps (each round, at most one round per node plus one, R31):
 * 1. catch up; raise streams and consumers (R5, R21);
 * 2. mint the provisions compositions need (R31); on the first push with a broker, replace the
 *    controller's genesis key (R14); stage the records' controller key when it is not
 *    the one in use, before the list that refuses the old one is sent (adoptControllerCredential, R50);
 * 3. compose every node (composeDeclarations): a node that cannot be composed is refused in the
 *    report and the rest go on (R30);
 * 4. send the named nodes and every node behind (composed digest ≠ last sent, R31; in the first
 *    round also a last report that is not that declaration applied, R78), empty
 *    declarations included (R29): a pipelined JetStream publish to declarationSubject(node) of the
 *    declaration with its secrets sealed to the node's key, preceded for a broker holder by the
 *    user list in parts (publishAll); DeclarationSent records as the bus acknowledges them
 *    (SentRecorder; a list holder's once its report came, with `wait` or a controller);
 * 5. catch up and compose again when the records moved under the round or a node was not sent
 *    (composeAgain): a node behind again is sent in the next round; the bound is the node count,
 *    and the report says when it was hit.
 * With `wait`, reports are subscribed before sending and each sent node's report of the digest is
 * awaited (R32): applied, failed (its error), or timed out (named in `timedOut`). The broker's
 * report also confirms a controller rotation, whose seed is then written to the credential
 * file (0600). `dryRun` composes and reports with secrets redacted, and changes nothing: it
 * composes the records as the push would, with the provisions the push would mint folded into a
 * copy of them (withProvisionsMinted, R31).
 * Throws only for bus failures (the records or JetStream unreachable).
 */
export async function push(ctx: PushContext, options: PushOptions = {}): Promise<PushReport> {
  const now = (ctx.now ?? (() => new Date()))().toISOString();
  const pushId = ctx.newId?.() ?? `push-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
  const actor = `controller-${CONTROLLER_NAME}`;
  const named = new Set(options.nodes ?? []);
  const outcomes = new Map<string, NodeReport>();
  const report: PushReport = {
    pushId, dryRun: options.dryRun === true, recordsSequence: 0, nodes: [], leftOut: [], freshCredentials: [], freshProvisions: [], provisionsMinted: 0,
    raised: { created: 0, updated: 0, refused: [] }, timedOut: [], rounds: 0, boundHit: false,
  };

  let state = await ctx.catalogue.catchUp();
  const lastListSequence = lastUserListSequence(state);
  const firstSent = firstDeclarations(state);
  /** The records as the push found them: what each node was last sent, before this push. */
  const found = state;
  /** Per node, the modules its last composition left out (no credential yet): said in its report line. */
  const leftOutByNode = new Map<string, ModuleLeftOut[]>();
  /** Takes a round plan's refusals, unchanged nodes and modules left out into the report's lines. */
  const takePlan = (plan: RoundPlan): void => {
    for (const { node, refusal } of plan.refused) outcomes.set(node, { node, outcome: "refused", refusal });
    for (const { node, digest } of plan.unchanged) if (!outcomes.has(node)) outcomes.set(node, { node, outcome: "unchanged", digest });
    for (const [node, modules] of plan.modulesLeftOut) {
      if (modules) leftOutByNode.set(node, modules);
      else leftOutByNode.delete(node);
    }
  };
  for (const line of unknownNamed(state, named)) outcomes.set(line.node, line);

  if (options.dryRun) {
    const minted = withProvisionsMinted(state, pushId, { commandId: `${pushId}-provisions`, actor, now, secrets: [] });
    report.provisionsMinted = minted.count;
    const jsm = await jetstreamManager(ctx.nc, { checkAPI: false });
    const { users, declarations } = composeDeclarations(minted.state, ctx.compose, sha256, await readOverlapReports(jsm, minted.state));
    report.recordsSequence = state.sequence;
    report.leftOut = users.leftOut;
    const overlaps = overlapsOfList(users);
    if (overlaps.length > 0) report.overlaps = overlaps;
    if (!users.ok) report.userList = users.refusal;
    const plan = planRound(state, declarations, named, 0, await firstRoundReports(ctx, jsm, pushId, state, declarations, named));
    takePlan(plan);
    for (const send of plan.sends) outcomes.set(send.node, { node: send.node, outcome: "sent", digest: send.digest });
    report.declarations = declarations.flatMap((result) => (result.ok ? [redactDeclaration(result.declaration)] : []));
    report.nodes = withModulesLeftOut(outcomes, leftOutByNode, state);
    report.freshCredentials = freshSince(state, lastListSequence);
    report.freshProvisions = freshProvisions(state, found);
    return report;
  }

  const js = jetstream(ctx.nc);
  const jsm = await jetstreamManager(ctx.nc, { checkAPI: false });
  const clock = ctx.clock ?? SYSTEM_CLOCK;
  let reportDeadline: number | undefined;
  /**
   * R32: every wait of this push for reports (the broker's in a round, the confirmation of a
   * rotated controller key, the final wait for every sent node) ends at one deadline, set by the
   * first of them: a push whose broker's host is down waits one timeout in all, not one per wait.
   */
  const deadline = (): number => (reportDeadline ??= clock.now() + (options.timeoutMs ?? DEFAULT_WAIT_MS));
  const watch = options.wait || ctx.controller ? new ReportWatch(ctx.nc, jsm, clock) : null;
  const sentDigests = new Map<string, string>();
  /**
   * R32: named nodes sent again with the declaration their last report says they applied (by
   * digest: when that report was stored). With `wait` they are `unchanged`, not waited for: a
   * stopped agent cannot make a stale report look like a fresh apply.
   */
  const appliedBefore = new Map<string, { digest: string; at: string }>();
  if (options.wait && watch) await watch.markFrom();
  // R60: a broker holder whose last report names a server that missed its list is sent it again.
  const holders = holdersOf(state, BROKER_SEAT);
  const repair = await missedServersOf(jsm, holders);
  for (const node of ctx.listRepairs ?? []) if (holders.includes(node)) repair.add(node);
  for (const node of repair) ctx.log.info(`push ${pushId}: ${node}'s last report names a server that missed the user list: sending it again (R60)`);
  /** The broker holders' reports of what this push sent them (R60: their servers' outcomes). */
  const lastReports = new Map<string, HostReport>();
  let rotated = false;
  /**
   * R14: waits for the broker's report of the declaration carrying the controller's rotated
   * key: the broker's one sent now, or (not behind) the one sent before, which carries the
   * list. Applied: the seed goes into the credential file. Sets report.controllerRotation.
   */
  const confirmRotation = async (watch: ReportWatch, current: State): Promise<void> => {
    const expected = rotationBrokers(current, sentDigests);
    for (const { node, digest } of expected) watch.expect(node, digest);
    const brokers = expected.map((b) => b.node);
    const missing = brokers.length === 0 ? ["(no broker sent)"] : await watch.wait(brokers, deadline());
    const applied = missing.length === 0 && brokers.every((n) => watch.report(n)?.ok === true);
    if (applied) {
      ctx.controller!.commit();
      ctx.log.info(`push ${pushId}: the bus took the controller's new key; the credential file is updated`);
    } else {
      ctx.log.error(`push ${pushId}: the broker did not confirm the controller's new key: it stays pending beside the credential file`);
    }
    report.controllerRotation = applied ? "applied" : "pending";
  };
  try {
    const bound = roundBound(state);
    for (let round = 0; ; round += 1) {
      if (round >= bound) {
        report.boundHit = true;
        ctx.log.error(`push ${pushId}: nodes were still behind after ${bound} rounds (the node count bound, R31): records keep changing under the push`);
        break;
      }
      report.rounds = round + 1;
      // 1. Raise (R5, R21).
      const raised = await timed(ctx.timings, "raise", () => raiseMesh(jsm, state, ctx.compose, ctx.raiseMemo && { memo: ctx.raiseMemo, nc: ctx.nc }, {
        onRetry: (attempt, error) => ctx.log.error(`push ${pushId}: raise attempt ${attempt}: the JetStream API is unavailable for now (${error instanceof Error ? error.message.split("\n")[0] : String(error)}): trying again`),
      }));
      report.raised.created += raised.created.length;
      report.raised.updated += raised.updated.length;
      report.raised.refused.push(...raised.refused);
      for (const refusal of raised.refused) ctx.log.error(`push ${pushId}: not raised: ${refusal.reason}`);
      // 2. Mint (R31, R14).
      report.provisionsMinted += await timed(ctx.timings, "mint", () => mintProvisions(ctx, pushId, actor, now));
      rotated = (await timed(ctx.timings, "mint", () => adoptControllerCredential(ctx, pushId, actor, now))) || rotated;
      state = await timed(ctx.timings, "catch-up", () => ctx.catalogue.catchUp());
      // 3. Compose every node (R30).
      // R73: the reports that decide which rotated modules' previous keys the list still admits.
      const overlapReports = await timed(ctx.timings, "reports", () => readOverlapReports(jsm, state));
      const { users, declarations } = await timed(ctx.timings, "compose", () => composeRemembered(ctx.compositionMemo, state, ctx.compose, overlapReports));
      report.recordsSequence = state.sequence;
      report.leftOut = [...users.leftOut]; // the composition may be remembered for the next push: the report keeps its own list
      if (users.ok) delete report.userList;
      else report.userList = users.refusal;
      const overlaps = overlapsOfList(users);
      if (overlaps.length > 0) report.overlaps = overlaps;
      else delete report.overlaps;
      // 4. Send the named and the behind (R29, R31), broker holders last (planRound); a broker
      // holder's list in parts first. The race left: a node offline during the push, or one slower
      // to apply than the holder's reload, is refused with its old key; its agent then presents
      // the pending seed its host made (R50), so it still fetches its declaration.
      // R60: a broker holder whose last report names a missed server is sent as if named.
      const asNamed = repair.size === 0 ? named : new Set([...named, ...repair]);
      const reported = round === 0 ? await timed(ctx.timings, "reports", () => firstRoundReports(ctx, jsm, pushId, state, declarations, asNamed)) : undefined;
      const plan = planRound(state, declarations as DeclarationResult[], asNamed, round, reported);
      takePlan(plan);
      const resent = unappliedLine(pushId, plan.sends);
      if (resent !== null) ctx.log.info(resent);
      if (plan.sends.length === 0) break;
      const opened = new Map<string, string>();
      const cut = new Map<string, UserListParts>();
      const sends: Send[] = plan.sends.map((planned) => {
        const send: Send = {
          node: planned.node, digest: planned.digest,
          // R43: the records' sequence, and the controller's tag on it that the host echoes.
          payload: () => JSON.stringify({
            ...sealForNode(planned.declaration, planned.publicKey, ctx.meshKey, opened, ctx.sealCache),
            recordsSequence: planned.recordsSequence,
            recordsTag: recordsTag(ctx.meshKey, { node: planned.node, digest: planned.digest, recordsSequence: planned.recordsSequence }),
          }),
        };
        const ref = planned.declaration.userList;
        if (ref && planned.userListText !== undefined) {
          let parts = cut.get(ref.digest);
          if (!parts) {
            parts = userListParts(planned.userListText, ref);
            cut.set(ref.digest, parts);
          }
          send.userList = parts;
        }
        return send;
      });
      if (options.wait && watch && round === 0) {
        for (const s of plan.sends) {
          if (s.behind) continue; // sent again only because it was named (R32)
          const at = await watch.appliedBefore(s.node, s.digest);
          if (at !== undefined) appliedBefore.set(s.node, { digest: s.digest, at });
        }
      }
      for (const s of sends) watch?.expect(s.node, s.digest);
      const refusedToSeal = new Map<string, string>();
      const purgeErrors: string[] = [];
      const composedAt = state.sequence;
      const recorder = new SentRecorder(ctx, pushId, round, composedAt, actor, now);
      const failures = await timed(ctx.timings, "publish", () => publishAll(js, jsm, sends, refusedToSeal, {
        timings: ctx.timings, progress: options.progress ?? ctx.progress, purgeErrors,
        sent: (node, digest) => recorder.sent(node, digest),
        beforeList: () => recorder.settle(),
      }));
      // Seen on a 2.9.10 cluster after a server died under the controller's connection: the
      // reconnected connection's publishes got no acknowledgement while core messages flowed; the
      // next round goes out on a fresh connection (R62).
      if ([...failures.values()].some((error) => /timeout/i.test(error))) await ctx.nc.reconnect().catch(() => undefined);
      for (const line of purgeErrors) ctx.log.error(`push ${pushId}: stale user-list parts not purged for ${line}`);
      const settled = settleRound(plan.sends, failures, refusedToSeal);
      for (const line of settled.lines) outcomes.set(line.node, line);
      const sent = settled.sent;
      for (const s of sent) sentDigests.set(s.node, s.digest);
      // The bus reloads when the broker's holder applies a new user list, and a reload fails the
      // JetStream requests in flight (503 "jetstream not enabled", or no reply); when the list
      // carries the controller's rotated key it also drops this connection (R14, R50). So the
      // broker's report is awaited here, before the next request (recording what was sent
      // included): once it arrived, the bus has reloaded (and the controller dials with its new
      // key).
      const brokers = new Set(holdersOf(state, BROKER_SEAT));
      const toBroker = sent.filter((s) => brokers.has(s.node)).map((s) => s.node);
      if (watch && toBroker.length > 0) {
        if (ctx.controller?.pending()) await confirmRotation(watch, state);
        else await watch.wait(toBroker, deadline());
      }
      const recorded = await timed(ctx.timings, "record", () => recorder.finish(sent));
      ctx.log.info(`push ${pushId}: round ${round + 1}: sent ${sent.length} declaration(s), ${failures.size} failed, composed from sequence ${composedAt}`);
      // 5. Again, while the records moved under the push, or a node was not sent (composeAgain).
      state = await timed(ctx.timings, "catch-up", () => ctx.catalogue.catchUp());
      if (!composeAgain({ composedAt, recorded, foldedTo: state.sequence, unsent: plan.sends.length - sent.length })) break;
    }

    // R14: the broker applying the list that carries the rotated key confirms it.
    if (ctx.controller?.pending() && watch && report.controllerRotation === undefined) await confirmRotation(watch, state);

    // R32: wait for each sent node's report. R55: a node this push did not send, whose last sent
    // declaration no report says it applied (its agent was down, or in a backoff longer than an
    // earlier wait), is waited for too: "unchanged" is said only of a declaration reported applied.
    if (options.wait && watch) {
      const unconfirmed = unconfirmedNodes(outcomes.values(), sentDigests);
      // Not sent by this push: its stored report counts, however old.
      for (const node of unconfirmed) watch.expect(node, outcomes.get(node)!.digest!, false);
      await watch.readStored(unconfirmed);
      const seen = { sentDigests, appliedBefore, unconfirmed, firstSent, report: (node: string) => watch.report(node), storedAt: (node: string) => watch.storedAt(node) };
      const missing = await watch.wait(awaitedNodes(seen), deadline());
      report.timedOut = missing.sort();
      judgeWait(outcomes, seen);
      if (missing.length > 0) ctx.log.error(`push ${pushId}: no report within ${options.timeoutMs ?? DEFAULT_WAIT_MS} ms from ${missing.join(", ")}`);
    }
    for (const node of holdersOf(state, BROKER_SEAT)) {
      const answer = watch?.report(node);
      if (answer && answer.digest === sentDigests.get(node)) lastReports.set(node, answer);
    }
    for (const [node, answer] of lastReports) {
      if (namesMissedServer(answer)) ctx.listRepairs?.add(node);
      else ctx.listRepairs?.delete(node);
    }
  } finally {
    watch?.close();
  }
  report.nodes = withModulesLeftOut(outcomes, leftOutByNode, state);
  report.freshCredentials = freshSince(state, lastListSequence);
  report.freshProvisions = freshProvisions(state, found);
  for (const [node, modules] of leftOutByNode) {
    ctx.log.info(`push ${pushId}: ${node}: left out ${modules.map((m) => `${m.module} (${m.reason})`).join(", ")}`);
  }
  // R60: each server's outcome of the list a broker holder applied in this push.
  const servers: ServerListLine[] = [];
  for (const node of holdersOf(state, BROKER_SEAT)) {
    if (!sentDigests.has(node)) continue;
    for (const one of lastReports.get(node)?.servers ?? []) {
      servers.push({ node, server: one.server, ok: one.ok === true, ...(one.changed === undefined ? {} : { changed: one.changed }), ...(one.error ? { error: one.error } : {}) });
    }
  }
  if (servers.length > 0) report.servers = servers;
  for (const line of servers.filter((s) => !s.ok)) ctx.log.error(`push ${pushId}: server ${line.server} missed the user list (${line.error ?? "no reason given"}): the next push sends it again (R60)`);
  const undelivered = userListUndelivered(state, report.nodes);
  if (undelivered && !report.userList) {
    report.userList = undelivered;
    ctx.log.error(`push ${pushId}: ${undelivered.message}`);
  }
  return report;
}
