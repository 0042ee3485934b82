import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { connectToBus, type BusCredential } from "../bus/connect.ts";
import { CONTROL_STREAM, declarationConsumer } from "../names.ts";
import { readLastApplied, readOwned, type Applied } from "./apply.ts";
import type { BusReloadOptions } from "./busList.ts";
import { busLogFiles, watchBusLog } from "./busLog.ts";
import type { HostReport } from "../contracts/report.ts";
import { backoffBound, backoffDelay, firstLine, restatedReport } from "./plan.ts";
import { NODE_CREDENTIAL_FILE, readNodePrivateKey } from "./keys.ts";
import { isAuthorizationRefusal } from "../bus/errors.ts";
import { RECONNECT_REFUSALS_BEFORE_BACKOFF, explainFailure, hostDialOptions, refusedAdvice } from "./connection.ts";
import { ownCredential, type OwnCredential } from "./ownCredential.ts";
import { reporter, type Reporter } from "./reporter.ts";
import { moduleRunner, type Runner } from "./runner.ts";
import { serveLogs } from "./logsService.ts";
import { reportLog } from "./reportLog.ts";
import { RUN_STATE_REPORT_MIN_MS, type Host, type HostOptions } from "./hostOptions.ts";
import { canReport, newLink, pause, type AgentLink } from "./agentLink.ts";
import { Declarations } from "./declarations.ts";
import { DriftCheck } from "./driftCheck.ts";

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
 * (and reported again) as soon as the last missing part arrives. A declaration is applied all or
 * nothing (R69): checked and staged first, then its own credential, the list and the files; a
 * failure changes nothing on disk, in the credential or in what the re-checks apply (R55).
 *
 * A refused connection (its credential not composed yet, R1; the node removed) or a consumer not
 * raised yet is retried with a jittered backoff up to a ceiling, one log line per attempt saying
 * why; every attempt is a new connection (nats.js closes a connection for good after two
 * authorization violations), and a reconnect the bus refuses ends the connection, so its retries
 * back off too instead of the client's own every 2 s.
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

export { HOST_DIAL_TIMEOUT_MS, hostDialOptions, refusedAdvice } from "./connection.ts";
export { RUN_STATE_REPORT_MIN_MS, type Host, type HostOptions } from "./hostOptions.ts";

/** Modules by run state (`running`: 2), for the metrics' gauge. */
function runStateCounts(runs: readonly { state: string }[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const { state } of runs) counts[state] = (counts[state] ?? 0) + 1;
  return counts;
}

/** The agent's parts, made once by startHost, which the connection loop and its helpers read. */
type Agent = {
  node: string;
  stateDir: string;
  options: HostOptions;
  log: (line: string) => void;
  link: AgentLink;
  own: OwnCredential;
  runner: Runner;
  reportsOut: Reporter;
  declarations: Declarations;
  drift: DriftCheck;
  /** The servers the user list goes to (none off the broker's node; several on a cluster, R60). */
  busTargets: readonly BusReloadOptions[];
  /** Whether this node applied a declaration in an earlier run (the bus admitted it then). */
  appliedBefore: boolean;
  backoff: { initialMs: number; maxMs: number };
};

/**
 * Starts the host agent for `node` and returns at once (the connection is made in the background,
 * retried with backoff). Throws HostStateError `no-key` when the state folder has no node key.
 */
export function startHost(options: HostOptions): Host {
  const { stateDir, node } = options;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  // 1. The node's key (throws no-key), its own credential, and the log of the reports it sends.
  const privateKey = readNodePrivateKey(stateDir);
  const backoff = { initialMs: options.backoff?.initialMs ?? 500, maxMs: options.backoff?.maxMs ?? 30_000 };
  const given = typeof options.credential === "function" ? options.credential : () => options.credential as BusCredential;
  const own = ownCredential(stateDir, node, given, options.credentialFile ?? join(stateDir, NODE_CREDENTIAL_FILE), log);
  const link = newLink();
  const published = reportLog(node, () => link.stopped);
  // 2. The module runner and the reporter; a change of a module's run state is reported again (R72).
  const runStates = runStateReports(link, options, () => runner, () => reportsOut);
  const runner = moduleRunner({ stateDir, log: (line) => log(`host ${node}: ${line}`), onChange: runStates.changed, ...(options.runner ?? {}) });
  const reportsOut = reporter({ node, log, stopped: () => link.stopped, ...backoff, extra: () => ({ modules: runner.states() }), onStored: () => options.metrics?.reportPublished() });
  // 3. The bus's logs watched (R70), the declarations consumer, the drift re-check (R55).
  const busTargets: readonly BusReloadOptions[] = options.bus === undefined ? [] : Array.isArray(options.bus) ? options.bus : [options.bus as BusReloadOptions];
  const busLogs = busLogFiles(busTargets.map((target) => target.configFile)).map((file) => watchBusLog(file, log));
  const publish = async (nc: NatsConnection, report: HostReport, applied: Applied | undefined) => {
    const sent = await reportsOut.send(nc, report);
    published.reports.push(sent);
    published.notify();
    options.onReport?.(sent, applied);
  };
  const declarations = new Declarations({ node, stateDir, privateKey, bus: options.bus, own, runner, link, log, publish });
  const drift = new DriftCheck({ node, stateDir, privateKey, link, reportsOut, log });
  const agent: Agent = { node, stateDir, options, log, link, own, runner, reportsOut, declarations, drift, busTargets, appliedBefore: appliedBefore(stateDir), backoff };
  // 4. The files checked at once, the last declaration's modules started (connected or not, R72), the re-checks timed.
  drift.check("start");
  startLastModules(agent);
  const checkEvery = options.checkIntervalMs ?? 60_000;
  const checker = checkEvery > 0 ? setInterval(() => drift.check("interval"), checkEvery) : undefined;
  checker?.unref();
  // 5. The connection loop, in the background until stop().
  const running = connectLoop(agent).then(() => published.notify());
  return {
    reports: published.reports,
    applied: published.applied,
    waitForReport: published.waitFor,
    bound: () => link.bound,
    async stop() {
      if (!link.stopped) {
        link.stopped = true;
        if (checker) clearInterval(checker);
        runStates.stop();
        await runner.stopAll();
        for (const watch of busLogs) watch.stop();
        link.current?.stop();
        link.wake?.();
        await link.current?.nc.close().catch(() => undefined);
      }
      await running;
      published.notify();
    },
  };
}

/**
 * R72: every report carries each module's run state; a change of it is published again, at most
 * once per RUN_STATE_REPORT_MIN_MS, and counted for the metrics' gauge. Its own state: the timer.
 */
function runStateReports(link: AgentLink, options: HostOptions, runner: () => Runner, reportsOut: () => Reporter): { changed: () => void; stop: () => void } {
  let timer: NodeJS.Timeout | undefined;
  const changed = () => {
    if (options.metrics) options.metrics.setModuleRunStates(runStateCounts(runner().states()));
    if (timer !== undefined || link.stopped) return;
    timer = setTimeout(() => {
      timer = undefined;
      const last = reportsOut().last();
      if (last !== undefined && canReport(link)) void reportsOut().send(link.current.nc, last);
    }, RUN_STATE_REPORT_MIN_MS);
  };
  return { changed, stop: () => { if (timer) clearTimeout(timer); } };
}

/** Whether this node applied a declaration in an earlier run (the bus admitted it then); false when unreadable. */
function appliedBefore(stateDir: string): boolean {
  try {
    return readOwned(stateDir) !== null;
  } catch {
    return false;
  }
}

/** R72: what the last applied declaration runs is started at once, connected or not. Never throws. */
function startLastModules({ node, stateDir, runner, log }: Agent): void {
  try {
    const last = readLastApplied(stateDir);
    if (last) runner.apply(last.declaration);
  } catch (error) {
    log(`host ${node}: its modules are not started at start: ${firstLine(error)}`);
  }
}

/**
 * Connects, serves, and on any failure dials again with a jittered backoff until stop(): one line
 * per attempt saying why (a refusal's first line says what to do, R1; the next ones briefly).
 */
async function connectLoop(agent: Agent): Promise<void> {
  const { node, stateDir, options, log, link, own } = agent;
  let attempt = 0;
  let everAdmitted = false;
  /** Refusals in a row: the first one's line says all that can be done, the next ones briefly. */
  let refusedInARow = 0;
  while (!link.stopped) {
    attempt += 1;
    let nc: NatsConnection | undefined;
    let failure: unknown;
    try {
      const credential = own.current();
      nc = await connectToBus(credential, {
        ...hostDialOptions(node, own.password, options.connectTimeoutMs),
        onCertificate: (pem) => { link.certificatePem = pem; },
      });
      link.current = { nc, stop: () => undefined };
      if (link.stopped) break;
      everAdmitted = true;
      options.metrics?.connected(nc);
      log(`host ${node}: connected to ${credential.address} as ${credential.user}`);
      refusedInARow = 0;
      await serve(agent, nc);
      if (!link.stopped) failure = link.refusedWith ?? new Error("the connection to the bus closed");
      link.refusedWith = undefined;
      attempt = 1;
    } catch (error) {
      failure = error;
    } finally {
      link.current = undefined;
      await nc?.close().catch(() => undefined);
    }
    if (link.stopped) break;
    // R1: a node the bus never admitted waits for the push composing its key: retried sooner.
    const delay = backoffDelay(attempt, agent.backoff.initialMs, backoffBound(agent.backoff.maxMs, everAdmitted || agent.appliedBefore), Math.random());
    if (isAuthorizationRefusal(failure)) {
      own.refused();
      const advice = refusedAdvice(node, stateDir, everAdmitted);
      log(refusedInARow++ === 0
        ? `host ${node}: attempt ${attempt} failed: ${firstLine(failure)}; ${advice}; retrying in ${delay} ms`
        : `host ${node}: attempt ${attempt} failed: ${firstLine(failure)} (${refusedInARow} refusals in a row; what to do: the first one's line above); retrying in ${delay} ms`);
      options.onRefused?.(advice);
    } else {
      log(`host ${node}: attempt ${attempt} failed: ${explainFailure(failure, node)}; retrying in ${delay} ms`);
    }
    await pause(link, delay);
  }
}

/**
 * One connection's life: binds the node's own CONTROL consumer (R2), watches the connection's
 * status, says again what the host holds (restate), sends what waited, then handles each message
 * in turn until the connection ends or the agent stops.
 */
async function serve(agent: Agent, nc: NatsConnection): Promise<void> {
  const { node, log, link, runner, reportsOut } = agent;
  const consumer = await jetstream(nc).consumers.get(CONTROL_STREAM, declarationConsumer(node));
  const messages = await consumer.consume({ max_messages: 4 });
  link.current = { nc, stop: () => { void messages.stop(); } };
  void nc.closed().then(() => { void messages.stop(); });
  link.bound = true;
  serveLogs(nc, node, runner, log);
  watchStatus(agent, nc);
  log(`host ${node}: bound ${CONTROL_STREAM}/${declarationConsumer(node)}, waiting for declarations`);
  restate(agent, nc);
  // A report the last connection could not get stored goes again on this one (R32).
  reportsOut.resume(nc);
  // R55: drift a re-check found while not bound goes after the restated report (REPORTS keeps the last)
  const unsent = agent.drift.takeUnsent();
  if (unsent) await reportsOut.send(nc, unsent);
  try {
    for await (const message of messages) {
      link.busy = true;
      try {
        await agent.declarations.handle(nc, message);
      } finally {
        link.busy = false;
      }
      if (link.stopped) break;
    }
  } finally {
    link.bound = false;
  }
}

/**
 * A dropped connection reconnects by itself, with the seed read again (own.password); bound() is
 * false meanwhile. Reconnects the bus refuses (both seeds of a rotation, R50) end it: the loop
 * dials again with backoff (the client's own redials come every 2 s for ever: a removed node's
 * filled the bus's log).
 */
function watchStatus(agent: Agent, nc: NatsConnection): void {
  const { node, log, link, own } = agent;
  let refusedHere = 0;
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === "error" && isAuthorizationRefusal((status as { error?: unknown }).error)) {
        own.refused();
        if (++refusedHere < RECONNECT_REFUSALS_BEFORE_BACKOFF) continue;
        link.refusedWith = (status as { error?: unknown }).error;
        link.bound = false;
        void nc.close().catch(() => undefined);
      } else if (status.type === "disconnect") {
        link.bound = false;
        log(`host ${node}: disconnected from the bus, reconnecting`);
      } else if (status.type === "reconnect" && link.current?.nc === nc && !link.stopped) {
        refusedHere = 0;
        link.bound = true;
        log(`host ${node}: reconnected to the bus`);
        restate(agent, nc);
      }
    }
  })().catch(() => undefined);
}

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
function restate({ node, stateDir, log, reportsOut, busTargets }: Agent, nc: NatsConnection): void {
  const last = reportsOut.last();
  if (last !== undefined) {
    void reportsOut.send(nc, last);
    return;
  }
  try {
    const owned = readOwned(stateDir);
    const first = busTargets[0];
    const listText = owned?.node === node && first && existsSync(first.includeFile) ? readFileSync(first.includeFile, "utf8") : undefined;
    const report = restatedReport(node, owned, listText);
    if (report) void reportsOut.send(nc, report);
  } catch (error) {
    log(`host ${node}: its last declaration is not reported again at start: ${firstLine(error)}`);
  }
}
