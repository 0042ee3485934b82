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
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { ControllerConfig } from "../config.ts";
import { openCatalogue, RecordsBehind, type Catalogue } from "../records/catalogue.ts";
import { InvalidEvent } from "../records/errors.ts";
import { keptMark, writeRecordsMark, type KeptMark } from "./recordsMark.ts";
import { watchReports } from "./reportWatch.ts";
import { reportHub, type ReportHub } from "../bus/reports.ts";
import { watchRecords } from "./recordsWatch.ts";
import { serveCommands, type CommandServer } from "../serve/server.ts";
import type { SeenVouch } from "../commands/seen.ts";
import type { Envelope } from "../commands/envelope.ts";
import { decideRecordControllerCredential } from "../commands/controllerCredential.ts";
import type { ComposeConfig } from "../compose/types.ts";
import { credentialOf } from "../projections/index.ts";
import { hashPassword, isSeedSecret, openWithMeshKey, publicKeyOfSeed, recordsTagVerifies, secretMatches, sealWithMeshKey, seenTag, seenTagVerifies } from "../crypto/secrets.ts";
import { CATALOGUE_STREAM, CONTROLLER_NAME } from "../names.ts";
import { newCompositionMemo, push, type PushContext, type PushOptions, type PushReport } from "../push/push.ts";
import { PUSH_VERB, pushVerb } from "../push/pushCommand.ts";
import { REPORTS_VERB, reportsVerb } from "../push/reports.ts";
import { controllerCredential, type ControllerCredential } from "../controller/credential.ts";
import { describeRaise, newRaiseMemo, raiseMesh, type RaiseReport } from "../controller/raise.ts";
import { replayVerb } from "./replayVerb.ts";
import { REPLAY_VERB } from "../commands/replay.ts";
import type { ControllerLog } from "./log.ts";
import { acquireLease, type HeldLease } from "./lease.ts";
import { StartStalled, watchStart } from "./startBound.ts";
import type { ControllerMetrics } from "../metrics/controller.ts";
import type { HeardReport } from "../metrics/nodeStates.ts";
import { startDiscovery } from "./discovery.ts";
import { CONTROLLER_DIAL, connect, redialer, waitForJetStream, watchBusStatus, type Hooks } from "./busLink.ts";

/** The controller's own dial settings, where callers have always found them (busLink.ts). */
export { CONTROLLER_DIAL };

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

/** Commits folded since the last snapshot before a push saves another. */
export const SNAPSHOT_EVERY = 5_000;

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
  const hooks: Hooks = { onReconnect: () => undefined, onLeaseLost: () => undefined };
  watchBusStatus(nc, log, hooks, metrics);
  const redial = redialer(nc, log);
  const held: Held = { lease: null, startWatch: null, stalled: null, marks: undefined };
  try {
    // 2a. JetStream answers: a cluster started with this controller (`mesh up` after `mesh down`)
    // elects its leaders for seconds after the servers accept connections.
    await waitForJetStream(nc, log);
    // 3. Load the snapshot and catch up, before the lease: a standby's takeover then folds only
    // what was appended since (R77).
    const { catalogue, foldTail } = await openRecords(nc, config, log, held);
    // 3a. The lease (R61): one controller active at a time; a standby waits here.
    if (config.leaseMs > 0) held.lease = await standBy(nc, config, log, { foldTail, redial, onLost: () => hooks.onLeaseLost() });
    signal?.removeEventListener("abort", abandon);
    if (nc.isClosed()) throw new Error("stopped before it held the controllers' lease (R61)");
    held.startWatch = held.lease && watchStartBound(nc, held, redial, log);
    // What the active controller appended while this one stood by.
    if (held.lease) await foldTail();
    sayFolded(catalogue, config, log);
    const evidence = await watchEvidence(nc, catalogue, config, log);
    hooks.onReconnect = () => { void evidence.records.recheck(); };
    const blocked = () => catalogue.held !== null || catalogue.behind !== null;
    const snapshots = { at: catalogue.state.sequence };

    // 4. The controller's credential (R14); not over records it cannot fold to their end.
    if (!blocked()) await recordCredential(catalogue, config, credential, log);

    // 5. Serve commands, push among them; 6. the raise is the push queue's first task (R21, R22).
    const jsm = await jetstreamManager(nc, { checkAPI: false });
    const raiseMemo = newRaiseMemo();
    const pushContext: PushContext = {
      nc, catalogue, meshKey: config.meshKey, compose, log, controller: credential, newId: () => `push-${randomUUID()}`,
      sealCache: new Map(), raiseMemo, compositionMemo: newCompositionMemo(), listRepairs: new Set(), reports: evidence.reportSubjects,
    };
    const raising: Promise<RaiseReport> = blocked()
      ? Promise.resolve({ created: [], updated: [], unchanged: [], refused: [] })
      : raiseMesh(jsm, catalogue.state, compose, { memo: raiseMemo, nc });
    const runPush = pushQueue(pushContext, raising, snapshots, metrics);
    const served = serve({ nc, jsm, catalogue, config, log, compose, metrics, runPush, evidence });
    await nc.flush(); // the subscription is on the server before start returns
    held.startWatch?.served();
    if (held.stalled) throw held.stalled;
    log.info(`serving commands at ${nc.getServer()}`);
    // A controller that lost the lease serves nothing more: another is active (R61).
    hooks.onLeaseLost = () => { void served.server.stop(); void served.discovery.stop(); stopEvidence(evidence); lostHook?.(); };
    // 6. The start's raise: a failure stops the start (caught below: the lease is given up, R61).
    const raised = await raising.catch(async (error: unknown) => { await stopServing(served); throw error; });
    if (!blocked()) log.info(`raised the bus: ${describeRaise(raised)}`);
    for (const refusal of raised.refused) log.error(`not raised: ${refusal.reason}`);
    return { nc, catalogue, credential, raised, push: runPush, stop: stopOnce({ nc, catalogue, log, held, served, evidence, snapshots, address }) };
  } catch (error) {
    // A leader that cannot start serving gives the lease up rather than holding it idle (R61).
    held.startWatch?.served();
    held.marks?.stop();
    await held.lease?.release().catch(() => undefined);
    await nc.close().catch(() => undefined);
    throw held.stalled ?? error;
  }
}

/** What the start holds and must give back if it fails: the lease, the start's bound (R61), the records mark (R43). */
type Held = {
  lease: HeldLease | null;
  startWatch: { served(): void } | null;
  /** Set when the start held the lease past its bound and gave it up (R61). */
  stalled: StartStalled | null;
  /** The records mark as kept while serving (R43, R76), once the records are open. */
  marks: KeptMark | undefined;
};


/**
 * Step 3: the records opened from the snapshot and caught up, the mark kept outside them (R43, in
 * `held`), and `foldTail`, which folds what was appended since. A commit no fold can read (R45)
 * does not stop the start: the controller serves `replay` to void it, and refuses every other verb
 * naming it (replyErrorOf).
 */
async function openRecords(nc: NatsConnection, config: ControllerConfig, log: ControllerLog, held: Held): Promise<{ catalogue: Catalogue; foldTail: () => Promise<unknown> }> {
  const marks = keptMark(config.stateDir, log);
  held.marks = marks;
  const catalogue = await openCatalogue(nc, {
    replicas: config.replicas, holdInvalid: true, onSnapshotIgnored: (line) => log.info(line),
    mark: marks.mark, onAdvance: marks.onAdvance,
  });
  // Records latched behind (R43) are not folded further: they are served as they are.
  const foldTail = async () => catalogue.behind !== null ? catalogue.state : catalogue.catchUp().catch((error: unknown) => {
    if (!(error instanceof InvalidEvent)) throw error;
    return catalogue.state;
  });
  return { catalogue, foldTail };
}

/** Step 3a (R61): waits as a standby until this controller holds the lease, folding the records as they grow (one fold at a time; a failed one is tried at the next poll). */
async function standBy(
  nc: NatsConnection, config: ControllerConfig, log: ControllerLog,
  { foldTail, redial, onLost }: { foldTail: () => Promise<unknown>; redial: (why: string) => void; onLost: () => void },
): Promise<HeldLease> {
  let folding = false;
  return acquireLease(nc, {
    holder: `${CONTROLLER_NAME}-${randomUUID().slice(0, 8)}`, leaseMs: config.leaseMs, replicas: config.replicas, log,
    onLost,
    onStalled: (what) => redial(what),
    whileStandingBy: () => {
      if (folding) return;
      folding = true;
      void foldTail().catch(() => undefined).finally(() => { folding = false; });
    },
  });
}

/**
 * R61: holding the lease, the start serves within a bound or gives the lease up (the lease first,
 * then the connection, which fails whatever the start waits on); the stall is kept in `held`.
 */
function watchStartBound(nc: NatsConnection, held: Held, redial: (why: string) => void, log: ControllerLog): { served(): void } {
  return watchStart({
    redial,
    giveUp: (error) => {
      held.stalled = error;
      log.error(error.message);
      void held.lease!.release().catch(() => undefined).finally(() => { void nc.close().catch(() => undefined); });
    },
  });
}

/** Says what the records were folded to and what holds them (R45, R43); writes the records mark when nothing does. */
function sayFolded(catalogue: Catalogue, config: ControllerConfig, log: ControllerLog): void {
  log.info(`records folded to sequence ${catalogue.state.sequence}`);
  if (catalogue.held) log.error(`${catalogue.held.message}; serving \`mesh replay\` only until then`);
  if (catalogue.behind) log.error(`${new RecordsBehind(catalogue.behind).message}; serving \`mesh replay\` only until then`);
  else if (!catalogue.held) writeRecordsMark(config.stateDir, { lastSequence: catalogue.state.sequence, streamCreated: catalogue.streamCreated });
}

/** The watches of evidence while serving: the hosts' reports (R43) and the records' configuration (R47). */
type Evidence = {
  reportSubjects: ReportHub;
  heard: Map<string, HeardReport>;
  reports: Awaited<ReturnType<typeof watchReports>>;
  records: ReturnType<typeof watchRecords>;
};

/**
 * R43: the hosts' reports are evidence too (a declaration composed from records the stream lacks).
 * Only a claim carrying the controller's own tag counts (recordsTag: under the mesh key, which no
 * host holds). One subscription to the report subjects for the whole controller: this watch and
 * every push hear it. R47: a change of the records' configuration is heard while serving.
 */
async function watchEvidence(nc: NatsConnection, catalogue: Catalogue, config: ControllerConfig, log: ControllerLog): Promise<Evidence> {
  const reportSubjects = reportHub(nc);
  const heard = new Map<string, HeardReport>();
  const reports = await watchReports(nc, catalogue, log, (fact, tag) => recordsTagVerifies(config.meshKey, fact, tag), reportSubjects, (node, r) => { heard.set(node, { digest: r.digest, ok: r.ok }); });
  const records = watchRecords(nc, catalogue, log);
  return { reportSubjects, heard, reports, records };
}

/** Ends the evidence watches. */
function stopEvidence({ reports, reportSubjects, records }: Evidence): void {
  reports.stop();
  reportSubjects.close();
  records.stop();
}

/**
 * Step 5: one push at a time, whether asked over the bus or in-process, the start's raise first.
 * R43: nothing is sent over records behind the world. A snapshot is saved every SNAPSHOT_EVERY
 * commits (`snapshots.at`, shared with stop).
 */
function pushQueue(pushContext: PushContext, raising: Promise<RaiseReport>, snapshots: { at: number }, metrics: ControllerMetrics | undefined): (options?: PushOptions) => Promise<PushReport> {
  const { catalogue } = pushContext;
  let queue: Promise<unknown> = raising.catch(() => undefined);
  return (options: PushOptions = {}): Promise<PushReport> => {
    const run = queue.then(async () => {
      if (catalogue.behind) throw new RecordsBehind(catalogue.behind);
      const started = performance.now();
      const report = await push(pushContext, options).catch((error: unknown) => {
        metrics?.pushDone(null, (performance.now() - started) / 1000);
        throw error;
      });
      metrics?.pushDone(report, (performance.now() - started) / 1000);
      if (catalogue.state.sequence - snapshots.at >= SNAPSHOT_EVERY) snapshots.at = (await catalogue.snapshot()).sequence;
      return report;
    });
    queue = run.catch(() => undefined);
    return run;
  };
}

/** What serving needs (serve). */
type Serving = {
  nc: NatsConnection; jsm: JetStreamManager; catalogue: Catalogue; config: ControllerConfig; log: ControllerLog;
  compose: ComposeConfig; metrics: ControllerMetrics | undefined; runPush: (options?: PushOptions) => Promise<PushReport>; evidence: Evidence;
};

/**
 * Step 5: the command server with its shell verbs (push, replay, reports), discovery (issue 30:
 * the NATS services protocol, its endpoints' statistics beside the metrics) and the metrics'
 * watch.
 */
function serve({ nc, jsm, catalogue, config, log, compose, metrics, runPush, evidence }: Serving): Served {
  // R68: an asker's CLI echoes the sequence the controller vouched for (seenTag: under the mesh key).
  const seen: SeenVouch = {
    tag: (sequence) => seenTag(config.meshKey, sequence),
    verifies: (sequence, tag) => seenTagVerifies(config.meshKey, sequence, tag),
  };
  const discovery = startDiscovery(nc, log);
  metrics?.watch({
    state: () => catalogue.state,
    heard: () => evidence.heard,
    recordsEnd: async () => (await jsm.streams.info(CATALOGUE_STREAM)).state.last_seq,
  });
  const sealSecret = (password: string) => sealWithMeshKey(config.meshKey, password);
  const openSecret = (sealed: string) => openWithMeshKey(config.meshKey, sealed);
  const server: CommandServer = serveCommands(
    nc,
    catalogue,
    {
      sealSecret, openSecret, now: () => new Date(), newId: () => randomUUID(), log, compose, seen,
      commandDone: (verb, outcome, seconds) => {
        metrics?.commandDone(verb, outcome, seconds);
        discovery.commandDone(verb, outcome, seconds);
      },
    },
    {
      [PUSH_VERB]: pushVerb(runPush, log, (subject, line) => nc.publish(subject, line), async () => (await catalogue.catchUp()).nodes, () => nc.info?.max_payload),
      [REPLAY_VERB]: replayVerb({
        nc, catalogue, log, now: () => new Date(), newId: () => randomUUID(), sealSecret, openSecret,
        installedList: (state) => evidence.reports.installedList(state), compose,
      }),
      [REPORTS_VERB]: reportsVerb(jsm, async () => (await catalogue.catchUp()).nodes),
    },
  );
  return { server, discovery };
}

/** What serve started: the command server and discovery. */
type Served = { server: CommandServer; discovery: { stop(): Promise<void> } };

/** Stops the command server, then discovery. */
async function stopServing({ server, discovery }: Served): Promise<void> {
  await server.stop();
  await discovery.stop();
}

/** What a started controller's stop ends, in order (stopOnce). */
type Running = {
  nc: NatsConnection; catalogue: Catalogue; log: ControllerLog; held: Held; served: Served;
  evidence: Evidence; snapshots: { at: number }; address: string;
};

/** Controller.stop: serving, the watches, the lease (R61), a last snapshot, the connection; once. */
function stopOnce({ nc, catalogue, log, held, served, evidence, snapshots, address }: Running): () => Promise<void> {
  let stopped = false;
  return async () => {
    if (stopped) return;
    stopped = true;
    await stopServing(served);
    stopEvidence(evidence);
    held.marks?.stop();
    // The lease first (R61): a standby takes over now, not after a snapshot that may be slow
    // (a snapshot is only a shortcut for the next start, and any controller may write one).
    await held.lease?.release();
    if (catalogue.state.sequence > snapshots.at && !catalogue.behind) await catalogue.snapshot().catch((error: unknown) => {
      log.error(`snapshot on stop failed: ${error instanceof Error ? error.message : String(error)}`);
    });
    // A drain needs the bus; without it the connection is closed, or it would go on reconnecting.
    await nc.drain().catch(() => nc.close()).catch(() => undefined);
    log.info(`stopped; disconnected from ${address}`);
  };
}
