import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { composeDeclarations, type DeclarationResult, type ModuleLeftOut } from "../compose/declaration.ts";
import { holdersOf, lastUserListSequence, type State } from "../projections/index.ts";
import { recordsTag } from "../crypto/secrets.ts";
import { BROKER_SEAT, CONTROLLER_NAME } from "../names.ts";
import type { HostReport } from "../contracts/report.ts";
import { raiseMesh } from "../controller/raise.ts";
import {
  awaitedNodes, composeAgain, firstDeclarations, freshProvisions, freshSince, judgeWait, rotationBrokers, planRound, reportsToRead, roundBound, settleRound,
  unappliedCounts, unconfirmedNodes, unknownNamed, userListUndelivered, withModulesLeftOut, type LastReported, type NodeReport, type PlannedSend,
  type RoundPlan,
} from "./plan.ts";
import { readLastReported, readOverlapReports } from "./reports.ts";
import { overlapsOfList } from "../compose/overlap.ts";
import { DEFAULT_WAIT_MS, SYSTEM_CLOCK, type PushContext, type PushOptions, type PushReport, type ServerListLine } from "./context.ts";
import { composeRemembered, redactDeclaration, sha256 } from "./composition.ts";
import { publishAll, sealForNode, userListParts, type Send, type UserListParts } from "./publish.ts";
import { mintProvisions, withProvisionsMinted } from "./provisions.ts";
import { adoptControllerCredential } from "./controllerKey.ts";
import { SentRecorder } from "./recorder.ts";
import { ReportWatch, missedServersOf, namesMissedServer } from "./watch.ts";
import { reportHub } from "../bus/reports.ts";

/**
 * Push (DESIGN.md "push", R5, R11, R12, R14, R21, R29..R32): mint what compositions need, compose
 * every node, send the named nodes and every node that is behind, record what was sent, and
 * optionally wait for each node's report of the applied digest.
 */

export type { NodeOutcome, NodeReport } from "./plan.ts";
export { userListUndelivered } from "./plan.ts";
export type { PushContext, PushLog, PushOptions, PushReport, WaitClock } from "./context.ts";
export { newCompositionMemo } from "./composition.ts";

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
  const run = await startRun(ctx, options);
  if (options.dryRun) return dryRun(run);
  const live = await goLive(run);
  let state = run.found;
  try {
    state = await sendRounds(run, live, state);
    await settleWaits(run, live, state);
  } finally {
    live.close();
  }
  return finishReport(run, live, state);
}

/** One push as it runs: what it was asked, the records as it found them, and the report it fills in. */
type Run = {
  ctx: PushContext;
  options: PushOptions;
  pushId: string;
  actor: string;
  now: string;
  named: ReadonlySet<string>;
  outcomes: Map<string, NodeReport>;
  report: PushReport;
  /** Per node, the modules its last composition left out (no credential yet): said in its report line. */
  leftOutByNode: Map<string, ModuleLeftOut[]>;
  /** The records as the push found them: what each node was last sent, before this push. */
  found: State;
  lastListSequence: number;
  firstSent: Set<string>;
};

/** What a push that sends keeps across its rounds and its waits for reports (R32). */
type Live = {
  js: JetStreamClient;
  jsm: JetStreamManager;
  watch: ReportWatch | null;
  /**
   * R32: every wait of this push for reports (the broker's in a round, the confirmation of a
   * rotated controller key, the final wait for every sent node) ends at one deadline, set by the
   * first of them: a push whose broker's host is down waits one timeout in all, not one per wait.
   */
  deadline: () => number;
  sentDigests: Map<string, string>;
  /**
   * R32: named nodes sent again with the declaration their last report says they applied (by
   * digest: when that report was stored). With `wait` they are `unchanged`, not waited for: a
   * stopped agent cannot make a stale report look like a fresh apply.
   */
  appliedBefore: Map<string, { digest: string; at: string }>;
  /** R60: broker holders sent as if named, their last report naming a server that missed the list. */
  repair: Set<string>;
  /** The broker holders' reports of what this push sent them (R60: their servers' outcomes). */
  lastReports: Map<string, HostReport>;
  close(): void;
};

/** Catches up and sets out the push's report; nodes named but not enrolled are refused at once. */
async function startRun(ctx: PushContext, options: PushOptions): Promise<Run> {
  const now = (ctx.now ?? (() => new Date()))().toISOString();
  const pushId = ctx.newId?.() ?? `push-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
  const actor = `controller-${CONTROLLER_NAME}`;
  const named = new Set(options.nodes ?? []);
  const report: PushReport = {
    pushId, dryRun: options.dryRun === true, recordsSequence: 0, nodes: [], leftOut: [], freshCredentials: [], freshProvisions: [], provisionsMinted: 0,
    raised: { created: 0, updated: 0, refused: [] }, timedOut: [], rounds: 0, boundHit: false,
  };
  const state = await ctx.catalogue.catchUp();
  const run: Run = {
    ctx, options, pushId, actor, now, named, outcomes: new Map(), report, leftOutByNode: new Map(),
    found: state, lastListSequence: lastUserListSequence(state), firstSent: firstDeclarations(state),
  };
  for (const line of unknownNamed(state, named)) run.outcomes.set(line.node, line);
  return run;
}

/** Takes a round plan's refusals, unchanged nodes and modules left out into the report's lines. */
function takePlan(run: Run, plan: RoundPlan): void {
  for (const { node, refusal } of plan.refused) run.outcomes.set(node, { node, outcome: "refused", refusal });
  for (const { node, digest } of plan.unchanged) if (!run.outcomes.has(node)) run.outcomes.set(node, { node, outcome: "unchanged", digest });
  for (const [node, modules] of plan.modulesLeftOut) {
    if (modules) run.leftOutByNode.set(node, modules);
    else run.leftOutByNode.delete(node);
  }
}

/** `dryRun`: composes the records as the push would (with what it would mint, withProvisionsMinted) and reports, secrets redacted. */
async function dryRun(run: Run): Promise<PushReport> {
  const { ctx, report, pushId, found: state } = run;
  const minted = withProvisionsMinted(state, pushId, { commandId: `${pushId}-provisions`, actor: run.actor, now: run.now, secrets: [] });
  report.provisionsMinted = minted.count;
  const jsm = await jetstreamManager(ctx.nc, { checkAPI: false });
  const { users, declarations } = composeDeclarations(minted.state, ctx.compose, sha256, await readOverlapReports(jsm, minted.state));
  report.recordsSequence = state.sequence;
  report.leftOut = users.leftOut;
  const overlaps = overlapsOfList(users);
  if (overlaps.length > 0) report.overlaps = overlaps;
  if (!users.ok) report.userList = users.refusal;
  const plan = planRound(state, declarations, run.named, 0, await firstRoundReports(ctx, jsm, pushId, state, declarations, run.named));
  takePlan(run, plan);
  for (const send of plan.sends) run.outcomes.set(send.node, { node: send.node, outcome: "sent", digest: send.digest });
  report.declarations = declarations.flatMap((result) => (result.ok ? [redactDeclaration(result.declaration)] : []));
  report.nodes = withModulesLeftOut(run.outcomes, run.leftOutByNode, state);
  report.freshCredentials = freshSince(state, run.lastListSequence);
  report.freshProvisions = freshProvisions(state, run.found);
  return report;
}

/**
 * The bus side of a push that sends: its report watch (the process's subscription, ctx.reports,
 * or one of its own) when it waits or has a controller key to confirm, and the broker holders to
 * repair (R60: their last report names a server that missed the list).
 */
async function goLive(run: Run): Promise<Live> {
  const { ctx, options, pushId } = run;
  const js = jetstream(ctx.nc);
  const jsm = await jetstreamManager(ctx.nc, { checkAPI: false });
  const clock = ctx.clock ?? SYSTEM_CLOCK;
  let reportDeadline: number | undefined;
  const watching = options.wait === true || ctx.controller !== undefined;
  const ownHub = watching && !ctx.reports ? reportHub(ctx.nc) : null;
  const watch = watching ? new ReportWatch((ctx.reports ?? ownHub)!, jsm, clock) : null;
  const live: Live = {
    js, jsm, watch, deadline: () => (reportDeadline ??= clock.now() + (options.timeoutMs ?? DEFAULT_WAIT_MS)),
    sentDigests: new Map(), appliedBefore: new Map(), repair: new Set(), lastReports: new Map(),
    close: () => { watch?.close(); ownHub?.close(); },
  };
  try {
    if (options.wait && watch) await watch.markFrom();
    const holders = holdersOf(run.found, BROKER_SEAT);
    live.repair = await missedServersOf(jsm, holders);
    for (const node of ctx.listRepairs ?? []) if (holders.includes(node)) live.repair.add(node);
    for (const node of live.repair) ctx.log.info(`push ${pushId}: ${node}'s last report names a server that missed the user list: sending it again (R60)`);
  } catch (error) {
    live.close();
    throw error;
  }
  return live;
}

/**
 * R14: waits for the broker's report of the declaration carrying the controller's rotated
 * key: the broker's one sent now, or (not behind) the one sent before, which carries the
 * list. Applied: the seed goes into the credential file. Sets report.controllerRotation.
 */
async function confirmRotation(run: Run, live: Live, watch: ReportWatch, current: State): Promise<void> {
  const { ctx, pushId } = run;
  const expected = rotationBrokers(current, live.sentDigests);
  for (const { node, digest } of expected) watch.expect(node, digest);
  const brokers = expected.map((b) => b.node);
  const missing = brokers.length === 0 ? ["(no broker sent)"] : await watch.wait(brokers, live.deadline());
  const applied = missing.length === 0 && brokers.every((n) => watch.report(n)?.ok === true);
  if (applied) {
    ctx.controller!.commit();
    ctx.log.info(`push ${pushId}: the bus took the controller's new key; the credential file is updated`);
  } else {
    ctx.log.error(`push ${pushId}: the broker did not confirm the controller's new key: it stays pending beside the credential file`);
  }
  run.report.controllerRotation = applied ? "applied" : "pending";
}

/** Runs rounds until nothing is behind, or the node-count bound is hit (R31); the state the last round left. */
async function sendRounds(run: Run, live: Live, start: State): Promise<State> {
  let state = start;
  const bound = roundBound(state);
  for (let round = 0; ; round += 1) {
    if (round >= bound) {
      run.report.boundHit = true;
      run.ctx.log.error(`push ${run.pushId}: nodes were still behind after ${bound} rounds (the node count bound, R31): records keep changing under the push`);
      return state;
    }
    run.report.rounds = round + 1;
    const next = await sendRound(run, live, round, state);
    state = next.state;
    if (!next.again) return state;
  }
}

/** Steps 1 and 2 of a round: raise (R5, R21), mint (R31), replace or stage the controller's key (R14, R50). */
async function raiseAndMint(run: Run, live: Live, state: State): Promise<void> {
  const { ctx, pushId, report } = run;
  const raised = await timed(ctx.timings, "raise", () => raiseMesh(live.jsm, state, ctx.compose, ctx.raiseMemo && { memo: ctx.raiseMemo, nc: ctx.nc }, {
    onRetry: (attempt, error) => ctx.log.error(`push ${pushId}: raise attempt ${attempt}: the JetStream API is unavailable for now (${error instanceof Error ? error.message.split("\n")[0] : String(error)}): trying again`),
  }));
  report.raised.created += raised.created.length;
  report.raised.updated += raised.updated.length;
  report.raised.refused.push(...raised.refused);
  for (const refusal of raised.refused) ctx.log.error(`push ${pushId}: not raised: ${refusal.reason}`);
  report.provisionsMinted += await timed(ctx.timings, "mint", () => mintProvisions(ctx, pushId, run.actor, run.now));
  await timed(ctx.timings, "mint", () => adoptControllerCredential(ctx, pushId, run.actor, run.now));
}

/**
 * Step 3 and the plan of step 4: compose every node (R30) and plan whom to send (R29, R31, R78),
 * broker holders last; R60: a broker holder whose last report names a missed server is sent as
 * if named.
 */
async function composeRound(run: Run, live: Live, round: number, state: State): Promise<RoundPlan> {
  const { ctx, report } = run;
  // R73: the reports that decide which rotated modules' previous keys the list still admits.
  const overlapReports = await timed(ctx.timings, "reports", () => readOverlapReports(live.jsm, state));
  const { users, declarations } = await timed(ctx.timings, "compose", () => composeRemembered(ctx.compositionMemo, state, ctx.compose, overlapReports));
  report.recordsSequence = state.sequence;
  report.leftOut = [...users.leftOut]; // the composition may be remembered for the next push: the report keeps its own list
  if (users.ok) delete report.userList;
  else report.userList = users.refusal;
  const overlaps = overlapsOfList(users);
  if (overlaps.length > 0) report.overlaps = overlaps;
  else delete report.overlaps;
  const asNamed = live.repair.size === 0 ? run.named : new Set([...run.named, ...live.repair]);
  const reported = round === 0 ? await timed(ctx.timings, "reports", () => firstRoundReports(ctx, live.jsm, run.pushId, state, declarations, asNamed)) : undefined;
  const plan = planRound(state, declarations as DeclarationResult[], asNamed, round, reported);
  takePlan(run, plan);
  const resent = unappliedLine(run.pushId, plan.sends);
  if (resent !== null) ctx.log.info(resent);
  return plan;
}

/** Each planned send as publishAll takes it: the payload sealed to the node at publish time (R43: with the records' tag), a broker holder's list cut once per digest. */
function sendsOf(ctx: PushContext, planned: readonly PlannedSend[]): Send[] {
  const opened = new Map<string, string>();
  const cut = new Map<string, UserListParts>();
  return planned.map((p) => {
    const send: Send = {
      node: p.node, digest: p.digest,
      // R43: the records' sequence, and the controller's tag on it that the host echoes.
      payload: () => JSON.stringify({
        ...sealForNode(p.declaration, p.publicKey, ctx.meshKey, opened, ctx.sealCache),
        recordsSequence: p.recordsSequence,
        recordsTag: recordsTag(ctx.meshKey, { node: p.node, digest: p.digest, recordsSequence: p.recordsSequence }),
      }),
    };
    const ref = p.declaration.userList;
    if (ref && p.userListText !== undefined) {
      let parts = cut.get(ref.digest);
      if (!parts) {
        parts = userListParts(p.userListText, ref);
        cut.set(ref.digest, parts);
      }
      send.userList = parts;
    }
    return send;
  });
}

/**
 * One round (the steps of push): raise, mint, compose, send; then catch up. `again` when the
 * records moved under the round or a node was not sent (composeAgain).
 */
async function sendRound(run: Run, live: Live, round: number, start: State): Promise<{ state: State; again: boolean }> {
  const { ctx, options, pushId } = run;
  await raiseAndMint(run, live, start);
  let state = await timed(ctx.timings, "catch-up", () => ctx.catalogue.catchUp());
  const plan = await composeRound(run, live, round, state);
  if (plan.sends.length === 0) return { state, again: false };
  const sends = sendsOf(ctx, plan.sends);
  const watch = live.watch;
  if (options.wait && watch && round === 0) {
    for (const s of plan.sends) {
      if (s.behind) continue; // sent again only because it was named (R32)
      const at = await watch.appliedBefore(s.node, s.digest);
      if (at !== undefined) live.appliedBefore.set(s.node, { digest: s.digest, at });
    }
  }
  for (const s of sends) watch?.expect(s.node, s.digest);
  const composedAt = state.sequence;
  const { sent, failures, recorded } = await publishRound(run, live, round, plan, sends, state);
  ctx.log.info(`push ${pushId}: round ${round + 1}: sent ${sent.length} declaration(s), ${failures.size} failed, composed from sequence ${composedAt}`);
  // 5. Again, while the records moved under the push, or a node was not sent (composeAgain).
  state = await timed(ctx.timings, "catch-up", () => ctx.catalogue.catchUp());
  return { state, again: composeAgain({ composedAt, recorded, foldedTo: state.sequence, unsent: plan.sends.length - sent.length }) };
}

/**
 * Step 4: publishes the round (publishAll), recording what the bus acknowledged as it goes
 * (SentRecorder); awaits the broker's report before recording the rest. The race left: a node
 * offline during the push, or one slower to apply than the holder's reload, is refused with its
 * old key; its agent then presents the pending seed its host made (R50), so it still fetches its
 * declaration.
 */
async function publishRound(run: Run, live: Live, round: number, plan: RoundPlan, sends: readonly Send[], state: State) {
  const { ctx, options, pushId } = run;
  const refusedToSeal = new Map<string, string>();
  const purgeErrors: string[] = [];
  const recorder = new SentRecorder(ctx, pushId, round, state.sequence, run.actor, run.now);
  const failures = await timed(ctx.timings, "publish", () => publishAll(live.js, live.jsm, sends, refusedToSeal, {
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
  for (const line of settled.lines) run.outcomes.set(line.node, line);
  const sent = settled.sent;
  for (const s of sent) live.sentDigests.set(s.node, s.digest);
  // The bus reloads when the broker's holder applies a new user list, and a reload fails the
  // JetStream requests in flight (503 "jetstream not enabled", or no reply); when the list
  // carries the controller's rotated key it also drops this connection (R14, R50). So the
  // broker's report is awaited here, before the next request (recording what was sent
  // included): once it arrived, the bus has reloaded (and the controller dials with its new
  // key).
  const brokers = new Set(holdersOf(state, BROKER_SEAT));
  const toBroker = sent.filter((s) => brokers.has(s.node)).map((s) => s.node);
  if (live.watch && toBroker.length > 0) {
    if (ctx.controller?.pending()) await confirmRotation(run, live, live.watch, state);
    else await live.watch.wait(toBroker, live.deadline());
  }
  const recorded = await timed(ctx.timings, "record", () => recorder.finish(sent));
  return { sent, failures, recorded };
}

/**
 * After the rounds: R14, the broker applying the list that carries the rotated key confirms it;
 * R32, with `wait`, each sent node's report is awaited. R55: a node this push did not send, whose
 * last sent declaration no report says it applied (its agent was down, or in a backoff longer than
 * an earlier wait), is waited for too: "unchanged" is said only of a declaration reported applied.
 * R60: the broker holders' reports decide which to repair next time (ctx.listRepairs).
 */
async function settleWaits(run: Run, live: Live, state: State): Promise<void> {
  const { ctx, options, report, outcomes } = run;
  const { watch, sentDigests, appliedBefore } = live;
  if (ctx.controller?.pending() && watch && report.controllerRotation === undefined) await confirmRotation(run, live, watch, state);
  if (options.wait && watch) {
    const unconfirmed = unconfirmedNodes(outcomes.values(), sentDigests);
    // Not sent by this push: its stored report counts, however old.
    for (const node of unconfirmed) watch.expect(node, outcomes.get(node)!.digest!, false);
    await watch.readStored(unconfirmed);
    const seen = { sentDigests, appliedBefore, unconfirmed, firstSent: run.firstSent, report: (node: string) => watch.report(node), storedAt: (node: string) => watch.storedAt(node) };
    const missing = await watch.wait(awaitedNodes(seen), live.deadline());
    report.timedOut = missing.sort();
    judgeWait(outcomes, seen);
    if (missing.length > 0) ctx.log.error(`push ${run.pushId}: no report within ${options.timeoutMs ?? DEFAULT_WAIT_MS} ms from ${missing.join(", ")}`);
  }
  for (const node of holdersOf(state, BROKER_SEAT)) {
    const answer = watch?.report(node);
    if (answer && answer.digest === sentDigests.get(node)) live.lastReports.set(node, answer);
  }
  for (const [node, answer] of live.lastReports) {
    if (namesMissedServer(answer)) ctx.listRepairs?.add(node);
    else ctx.listRepairs?.delete(node);
  }
}

/** The report's last lines: every node's outcome, fresh credentials and provisions, each server's outcome of the list (R60), an undelivered list (R49). */
function finishReport(run: Run, live: Live, state: State): PushReport {
  const { ctx, report, pushId } = run;
  report.nodes = withModulesLeftOut(run.outcomes, run.leftOutByNode, state);
  report.freshCredentials = freshSince(state, run.lastListSequence);
  report.freshProvisions = freshProvisions(state, run.found);
  for (const [node, modules] of run.leftOutByNode) {
    ctx.log.info(`push ${pushId}: ${node}: left out ${modules.map((m) => `${m.module} (${m.reason})`).join(", ")}`);
  }
  // R60: each server's outcome of the list a broker holder applied in this push.
  const servers: ServerListLine[] = [];
  for (const node of holdersOf(state, BROKER_SEAT)) {
    if (!live.sentDigests.has(node)) continue;
    for (const one of live.lastReports.get(node)?.servers ?? []) {
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
