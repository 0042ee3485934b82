import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { jetstream, type JsMsg } from "@nats-io/jetstream";
import { connectToBus, type BusCredential } from "../bus/connect.ts";
import { CONTROL_STREAM, declarationConsumer, declarationFilter } from "../names.ts";
import { boundedText, dropsOf, errorLine, total } from "../bus/total.ts";
import { readLastApplied, readOwned, recheckOwned, stageDeclaration, type Applied, type StagedDeclaration } from "./apply.ts";
import { installOnEveryServer, type BusReloadOptions } from "./busList.ts";
import { busLogFiles, watchBusLog } from "./busLog.ts";
import { shortDigest, type Declaration as HostDeclaration } from "../contracts/declaration.ts";
import type { HostReport } from "../contracts/report.ts";
import {
  appliedReport, backoffBound, backoffDelay, carryUnsent, driftedReport, failedReport, firstLine, listOutcomeText, messageKind, planApply, planList, readDeclaration, restatedReport,
  type ListInstallOutcome,
} from "./plan.ts";
import { NODE_CREDENTIAL_FILE, readNodePrivateKey } from "./keys.ts";
import { UserListParts } from "./userListParts.ts";
import { readPartHeader } from "../contracts/userList.ts";
import { isAuthorizationRefusal } from "../bus/errors.ts";
import { RECONNECT_REFUSALS_BEFORE_BACKOFF, explainFailure, hostDialOptions, refusedAdvice } from "./connection.ts";
import { ownCredential } from "./ownCredential.ts";
import { reporter } from "./reporter.ts";
import { moduleRunner } from "./runner.ts";
import { serveLogs } from "./logsService.ts";
import { reportLog } from "./reportLog.ts";
import { RUN_STATE_REPORT_MIN_MS, type Host, type HostOptions } from "./hostOptions.ts";

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
  const own = ownCredential(stateDir, node, given, options.credentialFile ?? join(stateDir, NODE_CREDENTIAL_FILE), log);
  const published = reportLog(node, () => stopped);
  const reports = published.reports;
  const notify = published.notify;
  let stopped = false;
  let current: { nc: NatsConnection; stop: () => void } | undefined;
  let isBound = false;
  let wakeSleeper: (() => void) | undefined;

  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => { wakeSleeper = undefined; resolve(); }, ms);
      wakeSleeper = () => { clearTimeout(timer); wakeSleeper = undefined; resolve(); };
    });

  // R72: every report carries each module's run state; a change of it is published again (bounded).
  let runStateTimer: NodeJS.Timeout | undefined;
  const runStateChanged = () => {
    if (options.metrics) options.metrics.setModuleRunStates(runStateCounts(runner.states()));
    if (runStateTimer !== undefined || stopped) return;
    runStateTimer = setTimeout(() => {
      runStateTimer = undefined;
      const last = reportsOut.last();
      if (last !== undefined && current && isBound && !stopped) void reportsOut.send(current.nc, last);
    }, RUN_STATE_REPORT_MIN_MS);
  };
  const runner = moduleRunner({ stateDir, log: (line) => log(`host ${node}: ${line}`), onChange: runStateChanged, ...(options.runner ?? {}) });
  const reportsOut = reporter({ node, log, stopped: () => stopped, initialMs, maxMs, extra: () => ({ modules: runner.states() }), onStored: () => options.metrics?.reportPublished() });

  const publishReport = async (nc: NatsConnection, report: HostReport, applied: Applied | undefined) => {
    const sent = await reportsOut.send(nc, report);
    reports.push(sent);
    notify();
    options.onReport?.(sent, applied);
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
  };

  /** The servers the user list goes to (none off the broker's node; several on a cluster, R60). */
  const busTargets: readonly BusReloadOptions[] = options.bus === undefined ? [] : Array.isArray(options.bus) ? options.bus : [options.bus as BusReloadOptions];
  // R70: on the bus's machine, each server's log is rotated by size and its rotated files pruned here.
  const busLogs = busLogFiles(busTargets.map((target) => target.configFile)).map((file) => watchBusLog(file, log));
  const parts = new UserListParts(stateDir);
  /** The latest declaration whose user list lacked parts, applied again when they arrive. */
  let pending: HostDeclaration | undefined;

  /**
   * Applies one declaration as planApply and planList say, all or nothing (R69): every check first
   * (its list's parts, its own credential), its files staged; then its own credential saved, the
   * user list installed, and the files committed with what the re-checks apply (R55). A failure
   * undoes the credential and drops what was staged. Returns its report; never throws.
   */
  const apply = async (declaration: HostDeclaration, seq: number): Promise<{ report: HostReport; applied?: Applied; installed?: ListInstallOutcome[] }> => {
    let missingParts: number[] | undefined;
    let staged: StagedDeclaration | undefined;
    let undo: (() => void) | undefined;
    try {
      const plan = planApply(declaration, node, seq, options.bus !== undefined);
      if (!plan.ok) throw new Error(plan.error);
      if (plan.list.kind === "no-bus") throw new Error(plan.list.error);
      const adoption = plan.adopt ? own.planAdoption(plan.adopt) : null;
      let listText: string | undefined;
      if (plan.list.kind === "assemble") {
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
        listText = list.text;
      }
      staged = stageDeclaration(stateDir, declaration, privateKey, certificatePem);
      // Before any user list: this node may hold the broker, and its reload drops the connection, which must come back with the new key (R50).
      if (adoption) undo = own.adopt(adoption);
      const done = listText === undefined ? undefined : await installOnEveryServer(listText, options.bus!, (line) => log(`host ${node}: ${line}`));
      const report = { ...appliedReport(node, declaration, listText), ...(done?.servers ? { servers: done.servers } : {}) };
      const applied = staged.commit({ declaration, report, ...(certificatePem === undefined ? {} : { certificatePem }) });
      runner.apply(declaration);
      pending = undefined;
      parts.discardExcept();
      return { report, applied, ...(done ? { installed: done.installed } : {}) };
    } catch (error) {
      try {
        undo?.();
      } catch (undoError) {
        log(`host ${node}: its credential could not be put back: ${firstLine(undoError)}`);
      }
      return { report: failedReport(node, declaration, error, missingParts) };
    } finally {
      staged?.discard();
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
      log(`host ${node}: message #${message.seq} on ${message.subject} ignored: ${firstLine(error)}`);
    }
    message.ack();
    if (completes && pending) {
      const started = Date.now();
      const declaration = pending;
      const { report, applied, installed } = await apply(declaration, message.seq);
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
    serveLogs(nc, node, runner, log);
    // A dropped connection reconnects by itself, with the seed read again (own.password); bound()
    // is false meanwhile. Reconnects the bus refuses (both seeds of a rotation, R50) end it: the
    // loop dials again with backoff (the client's own redials come every 2 s for ever: a removed
    // node's filled the bus's log).
    let refusedHere = 0;
    void (async () => {
      for await (const status of nc.status()) {
        if (status.type === "error" && isAuthorizationRefusal((status as { error?: unknown }).error)) {
          own.refused();
          if (++refusedHere < RECONNECT_REFUSALS_BEFORE_BACKOFF) continue;
          refusedWith = (status as { error?: unknown }).error;
          isBound = false;
          void nc.close().catch(() => undefined);
        } else if (status.type === "disconnect") {
          isBound = false;
          log(`host ${node}: disconnected from the bus, reconnecting`);
        } else if (status.type === "reconnect" && current?.nc === nc && !stopped) {
          refusedHere = 0;
          isBound = true;
          log(`host ${node}: reconnected to the bus`);
          restate(nc);
        }
      }
    })().catch(() => undefined);
    log(`host ${node}: bound ${CONTROL_STREAM}/${declarationConsumer(node)}, waiting for declarations`);
    restate(nc);
    // A report the last connection could not get stored goes again on this one (R32).
    reportsOut.resume(nc);
    // R55: drift a re-check found while not bound goes after the restated report (REPORTS keeps the last)
    if (driftReport) {
      const report = driftReport;
      driftReport = undefined;
      await reportsOut.send(nc, report);
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
  /** The drift re-checks found while not bound, published at the next bind (R55), each one's files kept. */
  let driftReport: HostReport | undefined;
  /** The refusal that ended the last connection (a reconnect the bus refused), for the loop's backoff. */
  let refusedWith: unknown;
  /** Refusals in a row: the first one's line says all that can be done, the next ones briefly. */
  let refusedInARow = 0;
  /** The bus certificate as PEM, pinned at the last connect: written beside each module (R57). */
  let certificatePem: string | undefined;
  const loop = async () => {
    let attempt = 0;
    while (!stopped) {
      attempt += 1;
      let nc: NatsConnection | undefined;
      let failure: unknown;
      try {
        const credential = own.current();
        nc = await connectToBus(credential, {
          ...hostDialOptions(node, own.password, options.connectTimeoutMs),
          onCertificate: (pem) => { certificatePem = pem; },
        });
        current = { nc, stop: () => undefined };
        if (stopped) break;
        everAdmitted = true;
        options.metrics?.connected(nc);
        log(`host ${node}: connected to ${credential.address} as ${credential.user}`);
        refusedInARow = 0;
        await serve(nc);
        if (!stopped) failure = refusedWith ?? new Error("the connection to the bus closed");
        refusedWith = undefined;
        attempt = 1;
      } catch (error) {
        failure = error;
      } finally {
        current = undefined;
        await nc?.close().catch(() => undefined);
      }
      if (stopped) break;
      // R1: a node the bus never admitted waits for the push composing its key: retried sooner.
      const delay = backoffDelay(attempt, initialMs, backoffBound(maxMs, everAdmitted || appliedBefore), Math.random());
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
      log(`host ${node}: re-check (${when}) of its files failed: ${firstLine(error)}`);
      return;
    }
    if (!found || found.drift.length === 0) return;
    const { report: drifted, line } = driftedReport(node, found.last.report, found.drift, when);
    log(line);
    if (current && isBound) void reportsOut.send(current.nc, drifted);
    else driftReport = carryUnsent(driftReport, drifted);
  };
  recheck("start");
  // R72: what the last applied declaration runs is started at once, connected or not.
  try {
    const last = readLastApplied(stateDir);
    if (last) runner.apply(last.declaration);
  } catch (error) {
    log(`host ${node}: its modules are not started at start: ${firstLine(error)}`);
  }
  const checkEvery = options.checkIntervalMs ?? 60_000;
  const checker = checkEvery > 0 ? setInterval(() => recheck("interval"), checkEvery) : undefined;
  checker?.unref();

  const running = loop();

  return {
    reports,
    applied: published.applied,
    waitForReport: published.waitFor,
    bound: () => isBound,
    async stop() {
      if (!stopped) {
        stopped = true;
        if (checker) clearInterval(checker);
        if (runStateTimer) clearTimeout(runStateTimer);
        await runner.stopAll();
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
