/**
 * The controller's start (DESIGN.md section 3, STYLE.md 8), as numbered steps:
 *
 * 1. read configuration: once, by parseControllerConfig (R35), passed in;
 * 2. connect: the controller's credential, TLS pinned to the bus certificate (R34), the address
 *    alone in every log line (R3); a rotated seed still pending beside the credential file is
 *    tried when the file's is refused (R14);
 * 3. load the snapshot and catch up (openCatalogue: the CATALOGUE stream first, it holds the
 *    records every other object is derived from; a stream that erases commits stops the start,
 *    R47); then, with a lease configured (a cluster), wait as a standby until this controller holds
 *    it (R61), folding the records as they grow (R77: a takeover only folds the last few), and
 *    serving nothing: nothing below runs on a standby; then hear the records' configuration change
 *    while serving (watchRecords);
 * 4. record the public key of the credential in use, only if none is recorded (R14); when the
 *    records hold a rotated one, use its seed instead of the file's (never the genesis one back);
 * 5. serve commands, `push` among them (every push raises again, R21);
 * 6. raise streams, then consumers, from the records (R5, R21, R22), the first task of the push
 *    queue: a command is answered while the raise creates what the last controller had not (R77),
 *    a push waits for it, and the start returns once it is done.
 */
import { randomUUID } from "node:crypto";
import type { NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { BusConnectError, connectToBus, type BusConnectOptions } from "../bus/connect.ts";
import type { ControllerConfig } from "../config.ts";
import { openCatalogue, RecordsBehind, type Catalogue } from "../records/catalogue.ts";
import { InvalidEvent } from "../records/errors.ts";
import { keptMark, writeRecordsMark, type KeptMark } from "./recordsMark.ts";
import { watchReports } from "./reportWatch.ts";
import { reportHub } from "../bus/reports.ts";
import { watchRecords } from "./recordsWatch.ts";
import { serveCommands, type CommandServer } from "../serve/server.ts";
import type { SeenVouch } from "../commands/seen.ts";
import type { Envelope } from "../commands/envelope.ts";
import { decideRecordControllerCredential } from "../commands/controllerCredential.ts";
import type { ComposeConfig } from "../compose/types.ts";
import { credentialOf } from "../projections/index.ts";
import { hashPassword, isSeedSecret, openWithMeshKey, publicKeyOfSeed, recordsTagVerifies, secretMatches, sealWithMeshKey, seenTag, seenTagVerifies } from "../crypto/secrets.ts";
import { CATALOGUE_STREAM, CONTROLLER_NAME } from "../names.ts";
import { BUS_READY_DELAYS_MS, retryJetStream } from "../bus/retry.ts";
import { isStreamNotFound } from "../bus/errors.ts";
import { newCompositionMemo, push, type PushContext, type PushOptions, type PushReport } from "../push/push.ts";
import { PUSH_VERB, pushVerb } from "../push/pushCommand.ts";
import { REPORTS_VERB, reportsVerb } from "../push/reports.ts";
import { controllerCredential, pendingPassword, type ControllerCredential } from "../controller/credential.ts";
import { describeRaise, newRaiseMemo, raiseMesh, type RaiseReport } from "../controller/raise.ts";
import { replayVerb } from "./replayVerb.ts";
import { REPLAY_VERB } from "../commands/replay.ts";
import type { ControllerLog } from "./log.ts";
import { acquireLease, type HeldLease } from "./lease.ts";
import { StartStalled, watchStart } from "./startBound.ts";
import { busStatusLine } from "./busStatus.ts";
import type { ControllerMetrics } from "../metrics/controller.ts";
import type { HeardReport } from "../metrics/nodeStates.ts";
import { startDiscovery } from "./discovery.ts";

/** A running controller. */
export type Controller = {
  nc: NatsConnection;
  catalogue: Catalogue;
  /** The credential the controller dials with now (a rotation switches it, R14). */
  credential: ControllerCredential;
  /** What the start's raise did. */
  raised: RaiseReport;
  /** Runs one push in-process (the `push` verb runs the same function). */
  push(options?: PushOptions): Promise<PushReport>;
  /** Stops serving, saves a snapshot, and closes the connection. */
  stop(): Promise<void>;
};

/** Caller settings of startController. */
export type StartOptions = {
  log: ControllerLog;
  /** Milliseconds to wait for the bus on the first connect (default 5,000). */
  connectTimeoutMs?: number;
  /**
   * Aborting it closes the connection: a standby still waiting for the lease (R61) stops waiting
   * and the start rejects; a started controller is stopped with `stop()` instead.
   */
  signal?: AbortSignal;
  /** Called once when this controller lost the lease while serving (R61): it serves nothing more. */
  onLeaseLost?: () => void;
  /** Where the controller counts what it does (src/metrics/controller.ts); served by the caller (`--metrics`). */
  metrics?: ControllerMetrics;
};

/**
 * The controller's own settings of every dial (connectToBus), beside its credential, its secret
 * and its first connect's timeout: its name on the bus, and no async traces (a command's fenced
 * append is a JetStream request, and the controller's log never shows a stack). The command bench's
 * controller dials with these too (test/support/commandMesh.ts), so it measures what ships.
 */
export const CONTROLLER_DIAL: Readonly<BusConnectOptions> = { name: CONTROLLER_NAME, asyncTraces: false };

/** Commits folded since the last snapshot before a push saves another. */
export const SNAPSHOT_EVERY = 5_000;

/** The bus refused the dialled seed (BusConnectError of kind `unauthorized`): a pending rotated one may be the right one. */
function isAuthorizationRefusal(error: unknown): boolean {
  return error instanceof BusConnectError && error.kind === "unauthorized";
}

/** Step 2: dial with the file's seed, else with a pending rotated one (then kept, R14). */
async function connect(config: ControllerConfig, credential: ControllerCredential, log: ControllerLog, timeoutMs: number): Promise<NatsConnection> {
  const address = credential.current().address;
  const dial = () => connectToBus(credential.current(), { ...CONTROLLER_DIAL, timeoutMs, secret: credential.dialPassword });
  try {
    const nc = await dial();
    // The server dialled, not the first configured: on a cluster that one may be down (R62).
    log.info(`connected to the bus at ${nc.getServer()} as ${credential.current().user}`);
    return nc;
  } catch (error) {
    const pending = pendingPassword(config.credentialFile, credential.current().user);
    if (!isAuthorizationRefusal(error) || pending === null) throw error;
    log.info(`the bus at ${address} refused the credential file's key; trying the rotated one pending beside it (R14)`);
    credential.stage(pending);
    const nc = await dial();
    credential.commit();
    log.info(`connected to the bus at ${nc.getServer()} as ${credential.current().user} with the rotated key; the credential file is updated`);
    return nc;
  }
}

/**
 * Seen on a 2.9.10 cluster (issue 14): after the reload of a user list that changed the
 * controller's own key, the reconnected connection could get no JetStream answer for a
 * minute while core messages flowed (its lease then lapsed, R61); a fresh connection answers at
 * once. So after each reconnect JetStream is asked (account info, 1.5 s each); no answer, twice:
 * dial again, well within a lease. Never throws.
 */
async function checkJetStreamAfterReconnect(nc: NatsConnection, log: ControllerLog): Promise<void> {
  for (let attempt = 1; attempt <= 2; attempt += 1) {
    try {
      await (await jetstreamManager(nc, { checkAPI: false, timeout: 1_500 })).getAccountInfo();
      return;
    } catch {
      if (nc.isClosed()) return;
    }
  }
  log.error("JetStream did not answer on the reconnected connection: dialling the bus again");
  await nc.reconnect().catch(() => undefined);
}

/**
 * Step 5 (R14): records a CredentialMinted for the controller with the public key of the seed in use
 * (a password's hash, from before nkeys), only when the records hold no controller credential. When
 * they hold one that is not the seed in use (rotated by a push whose confirmation this controller did not see), opens its sealed
 * secret with the mesh key and dials with that from now on, staged until the bus confirms it:
 * a restart never puts the genesis key back over a rotated one.
 */
async function recordCredential(catalogue: Catalogue, config: ControllerConfig, credential: ControllerCredential, log: ControllerLog): Promise<void> {
  const principal = { kind: "controller" as const, name: CONTROLLER_NAME };
  const recorded = credentialOf(catalogue.state.credentials, principal);
  if (recorded) {
    if (secretMatches(credential.password(), recorded)) return;
    if (recorded.sealed === undefined) {
      log.error("the records' controller credential holds no sealed seed and does not match the credential file: rotate it (`mesh credential rotate controller`)");
      return;
    }
    const password = openWithMeshKey(config.meshKey, recorded.sealed);
    credential.stage(password);
    log.info("the records hold a rotated controller credential: using it (R14); it replaces the credential file once the bus confirms it");
    return;
  }
  if (!catalogue.state.mesh) {
    log.error("the records have no genesis (MeshCreated) yet: the controller's credential is recorded once genesis is");
    return;
  }
  // The key in use: a seed's public key (R63); a controller still on a password from before nkeys
  // records its hash, and the first push with a broker rotates it onto a seed (R14).
  const password = credential.password();
  const key = isSeedSecret(password) ? { nkey: publicKeyOfSeed(password) } : { hash: hashPassword(password) };
  const sealed = sealWithMeshKey(config.meshKey, password);
  const commandId = `controller-credential-${randomUUID()}`;
  const { user, address } = credential.current();
  const envelope: Envelope = { commandId, actor: user, now: new Date().toISOString(), secrets: [] };
  const result = await catalogue.transact(commandId, (state) => decideRecordControllerCredential(state, { user, address, ...key, sealed }, envelope));
  if (result.ok) log.info(`recorded the controller's credential (${credential.current().user}) at sequence ${result.sequence} (R14)`);
}

/**
 * Starts the controller (see the module comment for the steps) and returns it running. Throws
 * BusConnectError (one line, the address alone) when the bus cannot be reached or refuses the
 * credential, InvalidEvent when the records hold an invalid commit. Raise refusals are logged,
 * not thrown: the controller still serves, and the next push reports them again.
 */
export async function startController(config: ControllerConfig, { log, connectTimeoutMs = 5_000, signal, onLeaseLost: lostHook, metrics }: StartOptions): Promise<Controller> {
  // 1. Configuration: parsed once by parseControllerConfig and passed in.
  const compose: ComposeConfig = { controllerSubmits: config.controllerSubmits, replicas: config.replicas };
  const credential = controllerCredential(config.credential, config.credentialFile);

  // 2. Connect (R34 pinned, R3 address only).
  const nc = await connect(config, credential, log, connectTimeoutMs);
  const abandon = () => { void nc.close().catch(() => undefined); };
  if (signal?.aborted) abandon();
  signal?.addEventListener("abort", abandon, { once: true });
  const address = credential.current().address;
  /** What a reconnect rechecks besides JetStream (set once the records are open). */
  let onReconnect: () => void = () => undefined;
  void (async () => {
    for await (const status of nc.status()) {
      // The server named is the one the event concerns (a survivor after a reconnect, R62).
      const line = busStatusLine(status, nc.getServer());
      if (line) log[line.level](line.text);
      if (status.type === "reconnect") {
        void checkJetStreamAfterReconnect(nc, log);
        onReconnect();
        metrics?.reconnected();
      }
    }
  })();

  /** Dials the bus again (once at a time) when JetStream stopped answering on a connection that is up. */
  let redialling = false;
  const redial = (why: string) => {
    if (redialling || nc.isClosed()) return;
    redialling = true;
    log.error(`${why}: dialling the bus again`);
    void nc.reconnect().catch(() => undefined).finally(() => { redialling = false; });
  };
  let lease: HeldLease | null = null;
  let startWatch: { served(): void } | null = null;
  /** Set when the start held the lease past its bound and gave it up (R61). */
  const start: { stalled: StartStalled | null } = { stalled: null };
  /** What losing the lease stops (set once serving). */
  let onLeaseLost: () => void = () => undefined;
  /** The records mark as kept while serving (R43, R76), once the records are open. */
  let marks: KeptMark | undefined;
  try {
    // 2a. JetStream answers: a cluster started with this controller (`mesh up` after `mesh down`)
    // elects its leaders for seconds after the servers accept connections.
    await retryJetStream("asking JetStream for the records' stream", () => jetstreamManager(nc, { checkAPI: false })
      .then((jsm) => jsm.streams.info(CATALOGUE_STREAM))
      .catch((error: unknown) => (isStreamNotFound(error) ? null : Promise.reject(error))), {
      delaysMs: BUS_READY_DELAYS_MS,
      onRetry: (attempt) => { if (attempt === 1) log.info("waiting for JetStream on the bus to answer (a cluster elects its leaders after a start)"); },
    });
    // 3. Load the snapshot and catch up, before the lease: a standby's takeover then folds only
    // what was appended since (R77). A commit no fold can read (R45) does not stop the start: the
    // controller serves `replay` to void it, and refuses every other verb naming it (replyErrorOf).
    // R43: the high-water mark kept outside the records says whether they went back.
    marks = keptMark(config.stateDir, log);
    const catalogue = await openCatalogue(nc, {
      replicas: config.replicas, holdInvalid: true, onSnapshotIgnored: (line) => log.info(line),
      mark: marks.mark, onAdvance: marks.onAdvance,
    });
    // Records latched behind (R43) are not folded further: they are served as they are.
    const foldTail = async () => catalogue.behind !== null ? catalogue.state : catalogue.catchUp().catch((error: unknown) => {
      if (!(error instanceof InvalidEvent)) throw error;
      return catalogue.state;
    });

    // 3a. The lease (R61): one controller active at a time; a standby waits here, folding the
    // records as they grow (one fold at a time; a failed one is tried at the next poll).
    if (config.leaseMs > 0) {
      let folding = false;
      lease = await acquireLease(nc, {
        holder: `${CONTROLLER_NAME}-${randomUUID().slice(0, 8)}`, leaseMs: config.leaseMs, replicas: config.replicas, log,
        onLost: () => onLeaseLost(),
        onStalled: (what) => redial(what),
        whileStandingBy: () => {
          if (folding) return;
          folding = true;
          void foldTail().catch(() => undefined).finally(() => { folding = false; });
        },
      });
    }

    signal?.removeEventListener("abort", abandon);
    if (nc.isClosed()) throw new Error("stopped before it held the controllers' lease (R61)");
    // R61: holding the lease, it serves within a bound or gives the lease up (the lease first, then
    // the connection, which fails whatever the start waits on).
    startWatch = lease && watchStart({
      redial,
      giveUp: (error) => {
        start.stalled = error;
        log.error(error.message);
        void lease!.release().catch(() => undefined).finally(() => { void nc.close().catch(() => undefined); });
      },
    });

    // What the active controller appended while this one stood by.
    if (lease) await foldTail();
    log.info(`records folded to sequence ${catalogue.state.sequence}`);
    if (catalogue.held) log.error(`${catalogue.held.message}; serving \`mesh replay\` only until then`);
    if (catalogue.behind) log.error(`${new RecordsBehind(catalogue.behind).message}; serving \`mesh replay\` only until then`);
    else if (!catalogue.held) writeRecordsMark(config.stateDir, { lastSequence: catalogue.state.sequence, streamCreated: catalogue.streamCreated });
    // R43: the hosts' reports are evidence too (a declaration composed from records the stream lacks).
    // Only a claim carrying the controller's own tag counts (recordsTag: under the mesh key, which no host holds).
    // One subscription to the report subjects for the whole controller: this watch and every push hear it.
    const reportSubjects = reportHub(nc);
    const heard = new Map<string, HeardReport>();
    const reports = await watchReports(nc, catalogue, log, (fact, tag) => recordsTagVerifies(config.meshKey, fact, tag), reportSubjects, (node, r) => { heard.set(node, { digest: r.digest, ok: r.ok }); });
    // R47: a change of the records' configuration is heard while serving (a reconnect reads it again).
    const records = watchRecords(nc, catalogue, log);
    onReconnect = () => { void records.recheck(); };
    const blocked = () => catalogue.held !== null || catalogue.behind !== null;
    let snapshotAt = catalogue.state.sequence;

    // 4. The controller's credential (R14); not over records it cannot fold to their end.
    if (!blocked()) await recordCredential(catalogue, config, credential, log);

    // 5. Serve commands, push among them; 6. the raise (below) is the push queue's first task.
    const jsm = await jetstreamManager(nc, { checkAPI: false });
    const raiseMemo = newRaiseMemo();
    const pushContext: PushContext = {
      nc, catalogue, meshKey: config.meshKey, compose, log, controller: credential, newId: () => `push-${randomUUID()}`,
      sealCache: new Map(), raiseMemo, compositionMemo: newCompositionMemo(), listRepairs: new Set(), reports: reportSubjects,
    };
    // 6. Raise streams, then consumers (R21, R22), before any push: one push at a time, whether
    // asked over the bus or in-process, and the start's raise first.
    const raising: Promise<RaiseReport> = blocked()
      ? Promise.resolve({ created: [], updated: [], unchanged: [], refused: [] })
      : raiseMesh(jsm, catalogue.state, compose, { memo: raiseMemo, nc });
    let queue: Promise<unknown> = raising.catch(() => undefined);
    const runPush = (options: PushOptions = {}): Promise<PushReport> => {
      const run = queue.then(async () => {
        // R43: nothing is sent over records behind the world.
        if (catalogue.behind) throw new RecordsBehind(catalogue.behind);
        const started = performance.now();
        const report = await push(pushContext, options).catch((error: unknown) => {
          metrics?.pushDone(null, (performance.now() - started) / 1000);
          throw error;
        });
        metrics?.pushDone(report, (performance.now() - started) / 1000);
        if (catalogue.state.sequence - snapshotAt >= SNAPSHOT_EVERY) snapshotAt = (await catalogue.snapshot()).sequence;
        return report;
      });
      queue = run.catch(() => undefined);
      return run;
    };
    // R68: an asker's CLI echoes the sequence the controller vouched for (seenTag: under the mesh key).
    const seen: SeenVouch = {
      tag: (sequence) => seenTag(config.meshKey, sequence),
      verifies: (sequence, tag) => seenTagVerifies(config.meshKey, sequence, tag),
    };
    // Discovery (issue 30): the NATS services protocol, its endpoints' statistics beside the metrics.
    const discovery = startDiscovery(nc, log);
    metrics?.watch({
      state: () => catalogue.state,
      heard: () => heard,
      recordsEnd: async () => (await jsm.streams.info(CATALOGUE_STREAM)).state.last_seq,
    });
    const server: CommandServer = serveCommands(
      nc,
      catalogue,
      {
        sealSecret: (password) => sealWithMeshKey(config.meshKey, password),
        openSecret: (sealed) => openWithMeshKey(config.meshKey, sealed),
        now: () => new Date(),
        newId: () => randomUUID(),
        log,
        compose,
        seen,
        commandDone: (verb, outcome, seconds) => {
          metrics?.commandDone(verb, outcome, seconds);
          discovery.commandDone(verb, outcome, seconds);
        },
      },
      {
        [PUSH_VERB]: pushVerb(runPush, log, (subject, line) => nc.publish(subject, line), async () => (await catalogue.catchUp()).nodes, () => nc.info?.max_payload),
        [REPLAY_VERB]: replayVerb({
          nc, catalogue, log, now: () => new Date(), newId: () => randomUUID(),
          sealSecret: (password) => sealWithMeshKey(config.meshKey, password),
          openSecret: (sealed) => openWithMeshKey(config.meshKey, sealed),
          installedList: (state) => reports.installedList(state), compose,
        }),
        [REPORTS_VERB]: reportsVerb(jsm, async () => (await catalogue.catchUp()).nodes),
      },
    );
    await nc.flush(); // the subscription is on the server before start returns
    startWatch?.served();
    if (start.stalled) throw start.stalled;
    log.info(`serving commands at ${nc.getServer()}`);
    // A controller that lost the lease serves nothing more: another is active (R61).
    onLeaseLost = () => { void server.stop(); void discovery.stop(); reports.stop(); reportSubjects.close(); records.stop(); lostHook?.(); };
    // 6. The start's raise: a failure stops the start (caught below: the lease is given up, R61).
    const raised = await raising.catch(async (error: unknown) => { await server.stop(); await discovery.stop(); throw error; });
    if (!blocked()) log.info(`raised the bus: ${describeRaise(raised)}`);
    for (const refusal of raised.refused) log.error(`not raised: ${refusal.reason}`);

    let stopped = false;
    return {
      nc,
      catalogue,
      credential,
      raised,
      push: runPush,
      stop: async () => {
        if (stopped) return;
        stopped = true;
        await server.stop();
        await discovery.stop();
        reports.stop(); reportSubjects.close();
        records.stop();
        marks?.stop();
        // The lease first (R61): a standby takes over now, not after a snapshot that may be slow
        // (a snapshot is only a shortcut for the next start, and any controller may write one).
        await lease?.release();
        if (catalogue.state.sequence > snapshotAt && !catalogue.behind) await catalogue.snapshot().catch((error: unknown) => {
          log.error(`snapshot on stop failed: ${error instanceof Error ? error.message : String(error)}`);
        });
        await nc.drain().catch(() => undefined);
        log.info(`stopped; disconnected from ${address}`);
      },
    };
  } catch (error) {
    // A leader that cannot start serving gives the lease up rather than holding it idle (R61).
    startWatch?.served();
    marks?.stop();
    await lease?.release().catch(() => undefined);
    await nc.close().catch(() => undefined);
    throw start.stalled ?? error;
  }
}
