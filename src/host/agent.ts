import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import type { NatsConnection } from "@nats-io/transport-node";
import { jetstream, type JsMsg } from "@nats-io/jetstream";
import { connectToBus, isSeed, secretOf, type BusConnectOptions, type BusCredential } from "../bus/connect.ts";
import { CONTROL_STREAM, REPORTS_STREAM, declarationConsumer, declarationFilter, reportSubject } from "../names.ts";
import { boundedText, dropsOf, errorLine, total } from "../bus/total.ts";
import { applyDeclaration, readOwned, recheckOwned, saveLastApplied, type Applied } from "./apply.ts";
import { installUserList, type BusReloadOptions } from "./busList.ts";
import { busLogFiles, watchBusLog } from "./busLog.ts";
import { shortDigest, type Declaration as HostDeclaration, type NodeSelf } from "../contracts/declaration.ts";
import { stampReport, type HostReport, type ServerListOutcome } from "../contracts/report.ts";
import {
  appliedReport, backoffBound, backoffDelay, reportRetryDelay, driftedReport, failedReport, listOutcomeText, messageKind, planApply, planList, presentedSeed, readDeclaration, restatedReport, seedAfterRefusal,
  type ListInstallOutcome,
} from "./plan.ts";
import { publicKeyOfSeed } from "../crypto/secrets.ts";
import { NODE_CREDENTIAL_FILE, promotePendingSeed, readCredentialFile, readNodePrivateKey, readNodeSeeds } from "./keys.ts";
import { writeBusCredential } from "../files/index.ts";
import { UserListParts } from "./userListParts.ts";
import { readPartHeader } from "../contracts/userList.ts";
import { isAuthorizationRefusal, isConsumerNotFound, isStreamNotFound } from "../bus/errors.ts";
import { dialAgainAfter, isTransientJetStreamError } from "../bus/retry.ts";

/**
 * The host agent (DESIGN.md section 7): the node side of a push.
 *
 * It dials the bus with the node's credential (pinned, its own inbox prefix), binds its OWN CONTROL
 * consumer (never creates it: its grants allow only the info, next and ack of that consumer, R2),
 * and for each declaration: applies it to the state folder (R29), installs the user list when the
 * node holds mesh-broker, acknowledges it, and reports `{node, digest, ok}` on its report subject
 * (R32). The consumer's one filter (declarationFilter) also brings the user list's parts, which
 * come before the declaration naming them: each is stored (UserListParts) and acknowledged; the
 * declaration installs the list only when its parts are complete and their digest matches. A
 * declaration whose parts are missing is reported `ok: false` naming them, and is applied again
 * (and reported again) as soon as the last missing part arrives. A refused connection (its credential not composed yet, R1) or a consumer not raised yet is
 * retried with backoff, one log line per attempt saying why; every attempt is a new connection
 * (nats.js closes a connection for good after two authorization violations).
 *
 * A declaration's `self` names the node's own current nkey (R64: the node generated the pair, the
 * mesh holds only the public key). A rotation (`mesh host rotate-key` made a pending seed, `mesh
 * credential rotate node --nkey` recorded its key) is taken in two steps that never lock the node
 * out (R50): while a pending seed exists, (re)connect attempts present the current seed until the
 * bus refuses it, then the pending one (and back on a refusal of that), so whichever key the
 * bus's list holds admits it within one refused attempt, even when the broker
 * installed the new list before this node's own declaration arrived; and the declaration naming
 * the pending key makes it the current one (saved to HostOptions.credentialFile) BEFORE any user
 * list is installed.
 */

/** Caller settings of startHost. */
export type HostOptions = {
  /** The node's state folder: its key (`node.key`), `owned.json` and the resources it applies. */
  stateDir: string;
  /** The node's mesh name (its consumer is `declarationConsumer(node)`). */
  node: string;
  /** The node's bus credential, or a function read at every connection attempt (a rotated file). */
  credential: BusCredential | (() => BusCredential);
  /**
   * Where the host saves its own credential when a declaration carries a new one (`self`, after a
   * `mesh credential rotate node`), 0600, atomically; from then on every connection attempt and
   * every reconnect reads it from there. Default: `<stateDir>/credential.json`.
   */
  credentialFile?: string;
  /**
   * Present on the node holding mesh-broker: where the user list goes and how the bus reloads. On
   * a cluster every server's (R60): each is installed and reloaded in turn, and the report names
   * each one's outcome (`servers`); the list counts as applied when at least one server took it.
   */
  bus?: BusReloadOptions | readonly BusReloadOptions[];
  /** One line per event (connected, applied, retrying); never a seed (R3). Default: stderr. */
  log?: (line: string) => void;
  /** Called after each declaration was handled and its report published. */
  onReport?: (report: HostReport, applied: Applied | undefined) => void;
  /**
   * Retry delays in milliseconds: first, doubled per attempt up to max (default 500 and 30,000;
   * at most NEW_NODE_BACKOFF_MAX_MS until the bus first admitted the node, R1).
   */
  backoff?: { initialMs?: number; maxMs?: number };
  /** Milliseconds to wait for one connection (default HOST_DIAL_TIMEOUT_MS, 30,000). */
  connectTimeoutMs?: number;
  /**
   * Called each time the bus refuses this node's credential (authorization), with the line saying
   * why and what to do (refusedAdvice). The agent keeps retrying; `mesh host --once` stops on it.
   */
  onRefused?: (advice: string) => void;
  /**
   * R55: milliseconds between re-checks of the files the last applied declaration owns (default
   * 60,000; 0: only the check at start). Drift is written back, logged, and reported on the bus as
   * that declaration's report with `drift` naming the files.
   */
  checkIntervalMs?: number;
};

/**
 * What to do about a refused credential. Before it was ever admitted: it is not on the list yet
 * (a push composes it, R1). Once admitted: the node was removed (`mesh node remove`: stop this
 * agent) or its key rotated: the agent presents its pending seed by itself (R50), and when the
 * mesh recorded a key this host does not hold, a new pair is made here and recorded (`mesh host
 * rotate-key`, then `mesh credential rotate node <node> --nkey`, R64).
 */
export function refusedAdvice(node: string, stateDir: string, everAdmitted: boolean): string {
  const rotated = `if its key was rotated, this agent presents its pending seed by itself; if the mesh recorded a key this host does not hold, make one here (\`mesh host rotate-key --state ${stateDir}\`), record it (\`mesh credential rotate node ${node} --nkey <the key it prints>\`) and push`;
  return everAdmitted
    ? `the bus refuses node ${node}'s credential: if the node was removed (\`mesh node remove ${node}\`), stop this agent; ${rotated}`
    : `the bus refuses node ${node}'s credential: it is not on the bus's user list (a push composes it, R1; the genesis node is carried by \`mesh genesis --node\`, R56); if the node was removed, stop this agent; ${rotated}`;
}

/**
 * Milliseconds a host agent gives one dial (TCP, TLS handshake, CONNECT answered), the first and
 * every reconnect: as long as the bus gives a TLS handshake (installer/serverConfig.ts
 * CLIENT_TLS_TIMEOUT_SECONDS, 30 s), so that in a reconnect storm a handshake the bus is still
 * working through is not given up and tried again (with 5 s a fleet of 2,000 never came back on a
 * loaded machine). What it costs: a dial to an address that does not answer at all waits this long
 * before the next attempt.
 */
export const HOST_DIAL_TIMEOUT_MS = 30_000;

/**
 * How a host agent dials the bus (connectToBus): named `mesh-host-<node>`, each dial bounded by
 * `connectTimeoutMs` (HOST_DIAL_TIMEOUT_MS), and `secret` read at every (re)connect, so an
 * authorization error never ends reconnecting (a rotation, R50; a list not yet reloaded). One
 * place: the fleet bench dials its mesh side with it.
 */
export function hostDialOptions(node: string, secret: () => string, connectTimeoutMs = HOST_DIAL_TIMEOUT_MS): BusConnectOptions {
  return { name: `mesh-host-${node}`, timeoutMs: connectTimeoutMs, secret };
}

/** A running host. */
export type Host = {
  /** Stops consuming, closes the connection and waits for the loop to end. Idempotent. */
  stop(): Promise<void>;
  /** Every report published so far, oldest first (a live array). */
  readonly reports: readonly HostReport[];
  /**
   * Every report, from the first one, as an async iterable (each iteration starts at the beginning
   * and ends when the host stops).
   */
  readonly applied: AsyncIterable<HostReport>;
  /** Resolves with the first report of `digest` (ok or not); rejects after `timeoutMs` (default 10,000). */
  waitForReport(digest: string, timeoutMs?: number): Promise<HostReport>;
  /** True while the host holds a bound consumer on a live connection. */
  bound(): boolean;
};

/** Why an attempt failed, for the log line: the reason, and what it probably means. */
function explainFailure(error: unknown, node: string): string {
  const message = error instanceof Error ? error.message.split("\n")[0]! : String(error);
  if (isAuthorizationRefusal(error)) {
    return `${message}; its credential is probably not in the bus's user list yet (a push composes it, R1)`;
  }
  if (isConsumerNotFound(error)) {
    return `consumer ${declarationConsumer(node)} on ${CONTROL_STREAM} does not exist yet (the controller raises it at start and on push)`;
  }
  if (isStreamNotFound(error)) return `stream ${CONTROL_STREAM} does not exist yet (the controller raises it at start)`;
  return message;
}

/**
 * Starts the host agent for `node` and returns at once (the connection is made in the background,
 * retried with backoff). Throws HostStateError `no-key` when the state folder has no node key.
 */
export function startHost(options: HostOptions): Host {
  const { stateDir, node } = options;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const privateKey = readNodePrivateKey(stateDir);
  const initialMs = options.backoff?.initialMs ?? 500;
  const maxMs = options.backoff?.maxMs ?? 30_000;
  const given = typeof options.credential === "function" ? options.credential : () => options.credential as BusCredential;
  const credentialFile = options.credentialFile ?? join(stateDir, NODE_CREDENTIAL_FILE);
  /** The credential saved from a declaration's `self` (kept in memory too, should the file vanish). */
  let adopted: BusCredential | undefined;
  /** The credential to dial with now: the saved file once a rotated one was adopted, else the given one. */
  const credentialOf = (): BusCredential => {
    if (!adopted) return given();
    try {
      return readCredentialFile(credentialFile, stateDir);
    } catch {
      return adopted;
    }
  };
  /** The secret (seed) the connection presents at each (re)connect (the last one read, should a read fail). */
  let lastPassword: string | undefined;
  /** While a seed is pending, whether the next attempt presents it (presentedSeed, seedAfterRefusal). */
  let preferPending = false;
  /** Whether the last attempt presented the pending seed. */
  let presentedPending = false;
  /** The bus refused what was presented: while a seed is pending, present the other one next. */
  const refusedSeed = () => { preferPending = seedAfterRefusal(presentedPending); };
  const passwordNow = (): string => {
    try {
      lastPassword = secretOf(credentialOf());
    } catch (error) {
      if (lastPassword === undefined) throw error;
    }
    // A rotation under way (R50, R64): the bus may hold either key; the current seed first, the
    // other once the bus refuses it; the declaration naming the new key ends it (adoptOwnCredential).
    let pending: string | undefined;
    try {
      pending = readNodeSeeds(stateDir).pending;
    } catch {
      pending = undefined;
    }
    const presented = presentedSeed(lastPassword, pending, preferPending);
    preferPending = presented.preferPending;
    presentedPending = presented.isPending;
    return presented.seed;
  };
  /**
   * Follows the declaration's own credential (R64): when it names the pending seed's key, that seed
   * becomes the node's current one (saved, with the declaration's user and fingerprint, to the
   * credential file, and `node.seed.next` made `node.seed`); when it names the current key, only a
   * changed user or fingerprint is saved. The address stays the host's own: the records' address
   * is where the mesh says the node reaches the bus (an overlay name once placed), which this host
   * may reach otherwise. Throws (the declaration is reported not applied) when it names a key this
   * node does not hold.
   */
  const adoptOwnCredential = (self: NodeSelf): void => {
    const now = credentialOf();
    const currentSeed = secretOf(now);
    const holds = (seed: string | undefined) => seed !== undefined && isSeed(seed) && publicKeyOfSeed(seed) === self.nkey;
    let seed: string;
    let promote = false;
    if (holds(currentSeed)) {
      seed = currentSeed;
    } else {
      const { pending } = readNodeSeeds(stateDir);
      if (!holds(pending)) {
        throw new Error(`the mesh names nkey ${self.nkey} for node ${node}, which this host holds neither as its seed nor as a pending one (\`mesh host rotate-key\` makes the pending one)`);
      }
      seed = pending!;
      promote = true;
    }
    const fingerprint = self.fingerprint || now.fingerprint;
    if (!promote && now.user === self.user && (now.fingerprint ?? "") === (fingerprint ?? "")) return;
    // The file's own addresses stay (a cluster's servers, R62); only user, seed and pin change.
    const next: BusCredential = {
      address: now.address, ...(now.addresses ? { addresses: now.addresses } : {}), user: self.user, seed, ...(fingerprint ? { fingerprint } : {}),
    };
    writeBusCredential(credentialFile, next);
    adopted = next;
    if (promote) promotePendingSeed(stateDir, credentialFile);
    log(`host ${node}: ${promote ? `took its rotated key ${self.nkey}` : "saved its credential"} for ${next.user} to ${credentialFile}`);
  };
  const reports: HostReport[] = [];
  const waiters = new Set<() => void>();
  const notify = () => { for (const wake of [...waiters]) wake(); };
  let stopped = false;
  let current: { nc: NatsConnection; stop: () => void } | undefined;
  let isBound = false;
  let wakeSleeper: (() => void) | undefined;

  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => { wakeSleeper = undefined; resolve(); }, ms);
      wakeSleeper = () => { clearTimeout(timer); wakeSleeper = undefined; resolve(); };
    });

  /**
   * R32: the latest report the REPORTS stream has not acknowledged yet, with its Nats-Msg-Id (a
   * report published twice is stored once). A push waits for the stored report, so one the bus
   * did not take (the connection dropped under it as a reload took the node's old key away, or
   * JetStream could not answer for a moment) is published again until the stream holds it. The
   * stream keeps one report per node, so a newer report replaces one still waiting.
   */
  let unstored: { data: string; id: string } | undefined;
  let retrying = false;
  /** Report publishes in a row the bus did not answer (R62: every third dials the bus again). */
  let unansweredInARow = 0;
  /** One JetStream publish of `waiting`; true when the stream acknowledged it. */
  const storeReport = async (nc: NatsConnection, waiting: { data: string; id: string }): Promise<boolean> => {
    try {
      await jetstream(nc).publish(reportSubject(node), waiting.data, { msgID: waiting.id });
      unansweredInARow = 0;
      if (unstored === waiting) unstored = undefined;
      return true;
    } catch (error) {
      if (waiting === unstored) log(`host ${node}: its report was not stored in ${REPORTS_STREAM} (${error instanceof Error ? error.message.split("\n")[0]! : String(error)}): publishing it again until it is`);
      if (isTransientJetStreamError(error) && dialAgainAfter(++unansweredInARow) && !nc.isClosed()) {
        log(`host ${node}: JetStream did not answer ${unansweredInARow} report publishes in a row on this connection: dialling the bus again`);
        void nc.reconnect().catch(() => undefined);
      }
      return false;
    }
  };
  /** Publishes the waiting report again, with backoff, until it is stored, the connection closes or the host stops (one loop at a time). */
  const storeWaitingReport = async (nc: NatsConnection): Promise<void> => {
    if (retrying) return;
    retrying = true;
    try {
      for (let attempt = 1; unstored !== undefined && !stopped && !nc.isClosed(); attempt += 1) {
        await new Promise((resolve) => setTimeout(resolve, reportRetryDelay(attempt, initialMs, maxMs)));
        const waiting = unstored;
        if (waiting !== undefined && !stopped && !nc.isClosed()) await storeReport(nc, waiting);
      }
    } finally {
      retrying = false;
    }
  };
  /** Sends `report` to the REPORTS stream: one attempt now, and again in the background until stored. */
  /** The last report this run sent (R68: said again at each reconnect). */
  let lastSent: HostReport | undefined;
  const sendReport = async (nc: NatsConnection, report: HostReport): Promise<void> => {
    lastSent = report;
    const waiting = { data: JSON.stringify(stampReport(report)), id: randomUUID() };
    unstored = waiting;
    if (!(await storeReport(nc, waiting))) void storeWaitingReport(nc);
  };

  const publishReport = async (nc: NatsConnection, report: HostReport, applied: Applied | undefined) => {
    await sendReport(nc, report);
    reports.push(report);
    notify();
    options.onReport?.(report, applied);
  };

  /**
   * R43 R44 R68: at each connection and reconnection, the host reports again what it holds: the
   * last report this run sent, or at the first, the last declaration it applied (its digest and
   * the records' sequence it was composed from) and, on the broker's node, the users of the list
   * the bus runs. After a restore the controller hears the world this way even when nothing is
   * sent to the host: a restore of the controller's machine restarts the bus under a running host
   * and brings back an older REPORTS stream (a records sequence past the records' end is evidence;
   * the users are named when the restore is accepted). Published only: not one of `reports` (the
   * replies to declarations this run handled). Never throws (a state it cannot read reports nothing).
   */
  const restate = (nc: NatsConnection) => {
    if (lastSent !== undefined) {
      void sendReport(nc, lastSent);
      return;
    }
    try {
      const owned = readOwned(stateDir);
      const first = busTargets[0];
      const listText = owned?.node === node && first && existsSync(first.includeFile) ? readFileSync(first.includeFile, "utf8") : undefined;
      const report = restatedReport(node, owned, listText);
      if (report) void sendReport(nc, report);
    } catch (error) {
      log(`host ${node}: its last declaration is not reported again at start: ${error instanceof Error ? error.message.split("\n")[0]! : String(error)}`);
    }
  };

  /** The servers the user list goes to (none off the broker's node; several on a cluster, R60). */
  const busTargets: readonly BusReloadOptions[] = options.bus === undefined ? [] : Array.isArray(options.bus) ? options.bus : [options.bus as BusReloadOptions];
  // R70: on the bus's machine, each server's log is rotated by size and its rotated files pruned here.
  const busLogs = busLogFiles(busTargets.map((target) => target.configFile)).map((file) => watchBusLog(file, log));
  /**
   * Installs `text` on every server in turn (R60). One server: its refusal is thrown as it is. A
   * cluster: each server's outcome is in `servers`, and only a list no server took is thrown; a
   * server that missed it keeps its old file, so the next push, which sends the list again to a
   * holder whose last report names a missed server, repairs it.
   */
  const installOnEveryServer = async (text: string): Promise<{ installed: ListInstallOutcome[]; servers?: ServerListOutcome[] }> => {
    if (!Array.isArray(options.bus)) {
      const done = await installUserList(text, busTargets[0]!);
      return { installed: [{ ok: true, changed: done.changed, ...(done.reloadMs === undefined ? {} : { reloadMs: done.reloadMs }) }] };
    }
    const installed: ListInstallOutcome[] = [];
    for (const [index, target] of busTargets.entries()) {
      const server = target.server ?? `server ${index + 1}`;
      try {
        const done = await installUserList(text, target);
        installed.push({ server, ok: true, changed: done.changed, ...(done.reloadMs === undefined ? {} : { reloadMs: done.reloadMs }) });
      } catch (error) {
        const why = error instanceof Error ? error.message.split("\n")[0]! : String(error);
        log(`host ${node}: server ${server} missed the user list: ${why}`);
        installed.push({ server, ok: false, error: why });
      }
    }
    // The report carries each server's outcome without the reload's time.
    const servers: ServerListOutcome[] = installed.map(({ reloadMs: _reloadMs, server, ...outcome }) => ({ server: server!, ...outcome }));
    if (!installed.some((o) => o.ok)) throw new Error(`no server took the user list: ${servers.map((s) => `${s.server}: ${s.error}`).join("; ")}`);
    return { installed, servers };
  };
  const parts = new UserListParts(stateDir);
  /** The latest declaration whose user list lacked parts, applied again when they arrive. */
  let pending: HostDeclaration | undefined;

  /** Applies one declaration (files, then the user list) as planApply and planList say, and returns its report; never throws. */
  const apply = async (declaration: HostDeclaration, seq: number): Promise<{ report: HostReport; applied?: Applied; installed?: ListInstallOutcome[] }> => {
    let applied: Applied | undefined;
    let missingParts: number[] | undefined;
    const plan = planApply(declaration, node, seq, options.bus !== undefined);
    try {
      if (!plan.ok) throw new Error(plan.error);
      if (plan.adopt) adoptOwnCredential(plan.adopt);
      applied = applyDeclaration(stateDir, declaration, privateKey, certificatePem);
      switch (plan.list.kind) {
        case "none":
          pending = undefined;
          parts.discardExcept();
          return { report: appliedReport(node, declaration), applied };
        case "no-bus":
          throw new Error(plan.list.error);
        case "assemble": {
          const list = planList(parts.assemble(plan.list.ref), plan.list.ref);
          if (list.kind === "await-parts") {
            pending = declaration;
            missingParts = list.missing;
            parts.discardExcept(list.keep);
            throw new Error(list.error);
          }
          pending = undefined;
          if (list.kind === "refuse") {
            parts.discard(list.discard);
            throw new Error(list.error);
          }
          const { installed, servers } = await installOnEveryServer(list.text);
          parts.discardExcept();
          return { report: { ...appliedReport(node, declaration, list.text), ...(servers ? { servers } : {}) }, applied, installed };
        }
      }
    } catch (error) {
      return { report: failedReport(node, declaration, error, missingParts), ...(applied ? { applied } : {}) };
    }
  };

  const logOutcome = (report: HostReport, applied: Applied | undefined, installed: readonly ListInstallOutcome[] | undefined, started: number) => {
    const short = shortDigest(report.digest);
    if (report.ok && applied) {
      // Every server's outcome (R60), not the first one's alone.
      const list = installed === undefined || installed.length === 0 ? "" : `, ${listOutcomeText(installed)}`;
      log(
        `host ${node}: applied declaration ${short} in ${Date.now() - started} ms: ${applied.owned.length} files owned, ` +
          `${applied.written.length} written, ${applied.removed.length} removed, ${applied.kept.length} found and kept${list}`,
      );
    } else {
      log(`host ${node}: declaration ${short} not applied: ${report.error}`);
    }
  };

  /** A user-list part: stored, acknowledged, and the pending declaration applied when it completes it. */
  const handlePart = async (nc: NatsConnection, message: JsMsg) => {
    let completes = false;
    try {
      const part = readPartHeader((name) => message.headers?.get(name) ?? "");
      parts.store(part, message.data);
      completes = pending?.userList?.digest === part.digest && parts.stored(part.digest).length >= pending.userList.parts;
    } catch (error) {
      log(`host ${node}: message #${message.seq} on ${message.subject} ignored: ${error instanceof Error ? error.message.split("\n")[0]! : String(error)}`);
    }
    message.ack();
    if (completes && pending) {
      const started = Date.now();
      const declaration = pending;
      const { report, applied, installed } = await apply(declaration, message.seq);
      if (applied) remember(declaration, report);
      logOutcome(report, applied, installed, started);
      await publishReport(nc, report, applied);
    }
  };

  const handle = async (nc: NatsConnection, message: JsMsg) => {
    if (messageKind(message.subject, node) === "part") {
      await handlePart(nc, message);
      return;
    }
    let raw: unknown;
    try {
      raw = message.json();
    } catch {
      raw = undefined;
    }
    const read = readDeclaration(raw, message.seq, node);
    const started = Date.now();
    let report: HostReport;
    let applied: Applied | undefined;
    let installed: ListInstallOutcome[] | undefined;
    if (read.ok) {
      ({ report, applied, installed } = await apply(read.declaration, message.seq));
      if (applied) remember(read.declaration, report);
    } else {
      report = read.report;
    }
    // Acknowledged either way: a declaration that cannot be applied is reported, and the next push
    // brings a new one (CONTROL consumers never dead-letter, R22, so an unacked one would loop).
    try {
      await message.ackAck();
    } catch {
      message.ack();
    }
    logOutcome(report, applied, installed, started);
    await publishReport(nc, report, applied);
  };

  // R65: nothing a message brings ends the loop: a subject that is not this node's declaration or
  // part, or a handler that throws, is one bounded line (dropsOf); a message that failed is
  // acknowledged, as handle acknowledges one it cannot apply (else CONTROL would bring it forever).
  const drop = dropsOf(log);
  const handleTotally = total(async (nc: NatsConnection, message: JsMsg) => {
    if (messageKind(message.subject, node) === "foreign") {
      drop("host-subject", `host ${node}: a message on ${boundedText(message.subject)} reached its declaration consumer: dropped, not ${declarationFilter(node)} (R65)`);
      return;
    }
    await handle(nc, message);
  }, (error, _nc, message) => {
    drop("host-failed", `host ${node}: a message on ${boundedText(message.subject)}: dropped, ${errorLine(error)} (R65)`);
    message.ack();
  });

  const serve = async (nc: NatsConnection) => {
    const consumer = await jetstream(nc).consumers.get(CONTROL_STREAM, declarationConsumer(node));
    const messages = await consumer.consume({ max_messages: 4 });
    current = { nc, stop: () => { void messages.stop(); } };
    void nc.closed().then(() => { void messages.stop(); });
    isBound = true;
    // A dropped connection (a reload that changed this node's key) reconnects by itself, with
    // the seed read again (passwordNow); bound() is false meanwhile.
    void (async () => {
      for await (const status of nc.status()) {
        if (status.type === "error" && isAuthorizationRefusal((status as { error?: unknown }).error)) {
          refusedSeed();
          const advice = refusedAdvice(node, stateDir, true);
          log(`host ${node}: ${advice}`);
          options.onRefused?.(advice);
        } else if (status.type === "disconnect") {
          isBound = false;
          log(`host ${node}: disconnected from the bus, reconnecting`);
        } else if (status.type === "reconnect" && current?.nc === nc && !stopped) {
          isBound = true;
          log(`host ${node}: reconnected to the bus`);
          restate(nc);
        }
      }
    })().catch(() => undefined);
    log(`host ${node}: bound ${CONTROL_STREAM}/${declarationConsumer(node)}, waiting for declarations`);
    restate(nc);
    // A report the last connection could not get stored goes again on this one (R32).
    if (unstored !== undefined) void storeWaitingReport(nc);
    // R55: drift a re-check found while not bound goes after the restated report (REPORTS keeps the last)
    if (driftReport) {
      const report = driftReport;
      driftReport = undefined;
      await publishDrift(nc, report);
    }
    try {
      for await (const message of messages) {
        busy = true;
        try {
          await handleTotally(nc, message);
        } finally {
          busy = false;
        }
        if (stopped) break;
      }
    } finally {
      isBound = false;
    }
  };

  let everAdmitted = false;
  /** Whether this node applied a declaration in an earlier run (the bus admitted it then). */
  const appliedBefore = (() => {
    try {
      return readOwned(stateDir) !== null;
    } catch {
      return false;
    }
  })();
  /** True while a declaration is being handled (a re-check waits for the next turn). */
  let busy = false;
  /** A drift report found while not bound, published at the next bind (R55). */
  let driftReport: HostReport | undefined;
  /** Keeps the declaration whose files were just applied, for the re-checks (R55). */
  const remember = (declaration: HostDeclaration, report: HostReport): void => {
    try {
      saveLastApplied(stateDir, { declaration, report, ...(certificatePem === undefined ? {} : { certificatePem }) });
    } catch (error) {
      log(`host ${node}: could not keep its last declaration for re-checks: ${error instanceof Error ? error.message.split("\n")[0]! : String(error)}`);
    }
  };
  /** Publishes a re-check's report (R55); not a declaration's, so neither `reports` nor onReport hear it. */
  const publishDrift = async (nc: NatsConnection, report: HostReport): Promise<void> => {
    await sendReport(nc, report);
  };
  /** The bus certificate as PEM, pinned at the last connect: written beside each module (R57). */
  let certificatePem: string | undefined;
  const loop = async () => {
    let attempt = 0;
    while (!stopped) {
      attempt += 1;
      let nc: NatsConnection | undefined;
      let failure: unknown;
      try {
        const credential = credentialOf();
        lastPassword = secretOf(credential);
        nc = await connectToBus(credential, {
          ...hostDialOptions(node, passwordNow, options.connectTimeoutMs),
          onCertificate: (pem) => { certificatePem = pem; },
        });
        current = { nc, stop: () => undefined };
        if (stopped) break;
        everAdmitted = true;
        log(`host ${node}: connected to ${credential.address} as ${credential.user}`);
        await serve(nc);
        if (!stopped) failure = new Error("the connection to the bus closed");
        attempt = 1;
      } catch (error) {
        failure = error;
      } finally {
        current = undefined;
        await nc?.close().catch(() => undefined);
      }
      if (stopped) break;
      // R1: a node the bus never admitted waits for the push composing its key: retried sooner.
      const delay = backoffDelay(attempt, initialMs, backoffBound(maxMs, everAdmitted || appliedBefore));
      if (isAuthorizationRefusal(failure)) {
        refusedSeed();
        const advice = refusedAdvice(node, stateDir, everAdmitted);
        log(`host ${node}: attempt ${attempt} failed: ${failure instanceof Error ? failure.message.split("\n")[0]! : String(failure)}; ${advice}; retrying in ${delay} ms`);
        options.onRefused?.(advice);
      } else {
        log(`host ${node}: attempt ${attempt} failed: ${explainFailure(failure, node)}; retrying in ${delay} ms`);
      }
      await pause(delay);
    }
    notify();
  };

  /**
   * R55: the files of the last applied declaration, checked again (at start, then every
   * checkIntervalMs): drift is written back, logged and reported (now when bound, else at the next
   * bind). Skipped while a declaration is being applied (it would write the previous one back).
   */
  const recheck = (when: "start" | "interval"): void => {
    if (busy || stopped) return;
    let found: ReturnType<typeof recheckOwned>;
    try {
      found = recheckOwned(stateDir, privateKey, certificatePem);
    } catch (error) {
      log(`host ${node}: re-check (${when}) of its files failed: ${error instanceof Error ? error.message.split("\n")[0]! : String(error)}`);
      return;
    }
    if (!found || found.drift.length === 0) return;
    const { report: drifted, line } = driftedReport(node, found.last.report, found.drift, when);
    log(line);
    if (current && isBound) void publishDrift(current.nc, drifted);
    else driftReport = drifted;
  };
  recheck("start");
  const checkEvery = options.checkIntervalMs ?? 60_000;
  const checker = checkEvery > 0 ? setInterval(() => recheck("interval"), checkEvery) : undefined;
  checker?.unref();

  const running = loop();

  const waitForReport = (digest: string, timeoutMs = 10_000) =>
    new Promise<HostReport>((resolve, reject) => {
      const check = () => {
        const found = reports.find((r) => r.digest === digest);
        if (found) { done(); resolve(found); return true; }
        if (stopped) { done(); reject(new Error(`host ${node} stopped before reporting ${digest}`)); return true; }
        return false;
      };
      const timer = setTimeout(() => { done(); reject(new Error(`host ${node} did not report ${digest} within ${timeoutMs} ms`)); }, timeoutMs);
      const done = () => { clearTimeout(timer); waiters.delete(wake); };
      const wake = () => { check(); };
      if (!check()) waiters.add(wake);
    });

  const applied: AsyncIterable<HostReport> = {
    [Symbol.asyncIterator]() {
      let index = 0;
      return {
        async next(): Promise<IteratorResult<HostReport>> {
          for (;;) {
            if (index < reports.length) return { value: reports[index++]!, done: false };
            if (stopped) return { value: undefined, done: true };
            await new Promise<void>((resolve) => {
              const wake = () => { waiters.delete(wake); resolve(); };
              waiters.add(wake);
            });
          }
        },
      };
    },
  };

  return {
    reports,
    applied,
    waitForReport,
    bound: () => isBound,
    async stop() {
      if (!stopped) {
        stopped = true;
        if (checker) clearInterval(checker);
        for (const watch of busLogs) watch.stop();
        current?.stop();
        wakeSleeper?.();
        await current?.nc.close().catch(() => undefined);
      }
      await running;
      notify();
    },
  };
}
