/**
 * `mesh push [node...] [--wait] [--dry-run]`: asks the controller to push (the `push` verb) and
 * prints its report per node: sent, unchanged, refused, applied, failed, timed out (R30, R32), and
 * the principals left out of the user list (R12). `--timeout` (the global option) is how long
 * `--wait` waits for the nodes' reports; the CLI waits for the reply that long plus
 * PUSH_REPLY_MARGIN_MS (composing and sending), and says both numbers when no reply came.
 */
import { seenMemory } from "./seenFile.ts";
import { printData, viewOf } from "./output.ts";
import { randomUUID } from "node:crypto";
import { VERBS, type NodeOutcome, type PushNodeLine, type PushReply, type Refusal } from "../contracts/verbs.ts";
import { EXIT_OK, EXIT_REFUSED, QUERY_GLOBALS, busRefusesKeyOf, credentialFileNow, loadCredential, type CliContext } from "./context.ts";
import { isAuthorizationRefusal } from "../bus/errors.ts";
import { busUser, progressSubject } from "../names.ts";
import { CommandTransportError } from "../client/send.ts";
import { meshClient, PUSH_REPLY_MARGIN_MS, type Answer } from "../client/client.ts";
import { missedServerLine, omittedLines, refusalText, serverLines, shortDigest, table, type View } from "./render.ts";
import type { CliVerb } from "./busVerb.ts";

export { PUSH_REPLY_MARGIN_MS };

/**
 * A push report as the CLI shows it: the push reply (src/contracts/verbs.ts) without its envelope;
 * `counts` may be absent from a report made by hand (renderPush then counts its lines).
 */
export type PushShown = Omit<PushReply, "ok" | "v" | "counts"> & { counts?: PushReply["counts"] };

/** How an outcome reads: a dry run sends nothing, so its "sent" is "would send". */
function outcomeText(report: PushShown, outcome: NodeOutcome): string {
  return report.dryRun && outcome === "sent" ? "would send" : outcome;
}

/**
 * A dry run's report narrowed to the named nodes (`mesh compose <node...>`): their lines and
 * declarations only, and `counts` over those lines (the reply's cover every node), as `mesh push
 * --json` carries them. Without names, or for a real push, the report as it came.
 */
export function onlyNamed(report: PushShown, nodes: readonly string[]): PushShown {
  if (!report.dryRun || nodes.length === 0) return report;
  const named = new Set(nodes);
  const lines = report.nodes.filter((n) => named.has(n.node));
  const counts: NonNullable<PushShown["counts"]> = {};
  for (const n of lines) counts[n.outcome] = (counts[n.outcome] ?? 0) + 1;
  return {
    ...report,
    nodes: lines,
    counts,
    ...(report.declarations ? { declarations: report.declarations.filter((d) => named.has(d.node)) } : {}),
  };
}

/**
 * Why a dry run's report of the whole mesh cannot show the named nodes (`mesh compose <node...>`),
 * or null when it has a line for each. It has a line for every enrolled node, so one it lacks is
 * not enrolled: refused `unknown-node` by `notEnrolled`, the words `mesh push <node>` is refused in
 * (src/push/pushCommand.ts, passed in: the CLI loads it only for this). Unless the reply was cut
 * to fit the bus's max payload (R59) and left node lines out: then the missing ones may be
 * enrolled, and are `not-shown`, naming where to read them.
 */
export function namedNotShown(report: PushShown, nodes: readonly string[], notEnrolled: (unknown: readonly string[]) => Refusal): Refusal | null {
  const shown = new Set(report.nodes.map((n) => n.node));
  const missing = [...new Set(nodes)].filter((node) => !shown.has(node));
  if (missing.length === 0) return null;
  const cut = report.omitted?.nodes;
  if (cut === undefined) return notEnrolled(missing);
  return {
    code: "not-shown",
    field: "nodes",
    message: `${missing.join(", ")} ${missing.length === 1 ? "is" : "are"} not among the node lines of this dry run: its reply left ${cut.count} out to fit the bus's max payload (R59); see ${cut.see}`,
  };
}

/**
 * Readable lines of a push report. A reply cut to fit the max payload (R59, pushReply) brings
 * `counts` over every node and `omitted`: the summary line is taken from the counts, and each cut
 * list is named with where to read it.
 */
export function renderPush(report: PushShown, view: View = {}): string[] {
  const lines: string[] = [];
  const rows = report.nodes.map((n: PushNodeLine) => ({
    node: n.node,
    outcome: outcomeText(report, n.outcome),
    digest: n.digest ? shortDigest(n.digest) : "",
    why: n.refusal ? `${n.refusal.code}: ${n.refusal.message}` : (n.error ?? (n.reportedAt ? `nothing new to apply: last reported applied at ${n.reportedAt}` : "")),
  }));
  lines.push(`${report.dryRun ? "dry run" : "push"} ${report.pushId} from records sequence ${report.recordsSequence}`);
  if (rows.length > 0) lines.push(...table(rows, ["node", "outcome", "digest", "why"], view.width));
  else lines.push("no node is enrolled");
  const counts = new Map<string, number>();
  if (report.counts) for (const [outcome, count] of Object.entries(report.counts)) counts.set(outcomeText(report, outcome as NodeOutcome), count ?? 0);
  else for (const n of report.nodes) counts.set(outcomeText(report, n.outcome), (counts.get(outcomeText(report, n.outcome)) ?? 0) + 1);
  lines.push([...counts.entries()].map(([k, v]) => `${v} ${k}`).join(", ") || "nothing to send");
  lines.push(...omittedLines(report));
  for (const n of report.nodes) {
    for (const m of n.modulesLeftOut ?? []) lines.push(`left out of ${n.node}'s declaration: module ${m.module}: ${m.reason}`);
  }
  for (const left of report.leftOut) lines.push(`left out of the user list: ${left.principal.kind} ${left.principal.name}: ${left.reason}`);
  if (report.userList) lines.push(`user list refused (${report.userList.code}): ${report.userList.message}`);
  if (report.provisionsMinted > 0) lines.push(report.dryRun ? `would mint ${report.provisionsMinted} provision(s) first (R31)` : `minted ${report.provisionsMinted} provision(s)`);
  // R73: a rotated module's old key stays admitted until its nodes report the new one: no line claims it refused.
  const overlaps = report.overlaps ?? [];
  const overlapping = new Set(overlaps.map((o) => `${o.principal.kind} ${o.principal.name}`));
  for (const o of overlaps) {
    lines.push(`previous key of ${o.principal.kind} ${o.principal.name} still admitted beside the new one (R73) until ${o.until.join(", ")} report${o.until.length === 1 ? "s" : ""} the new one applied; the push after that drops it`);
  }
  const fresh = (report.freshCredentials ?? []).map((p) => `${p.kind} ${p.name}`).filter((p) => !overlapping.has(p)).join(", ");
  // The old keys are refused only once the broker's holder applied a list carrying the new ones
  // (R44, R50), on every server of a cluster (R60): what is said follows this push's own outcomes.
  const missed = (report.servers ?? []).filter((s) => !s.ok).map((s) => s.server);
  if (fresh && report.dryRun) lines.push(`fresh keys this user list would carry: ${fresh}`);
  else if (fresh && report.userList !== undefined) lines.push(`fresh keys waiting for a user list to reach the bus (it still admits the old ones): ${fresh}`);
  else if (fresh && missed.length > 0) lines.push(`fresh keys in the user list the other servers reloaded (they refuse the old ones); ${missed.length === 1 ? "server" : "servers"} ${missed.join(", ")} missed it and may still admit the old ones until the next push sends it again: ${fresh}`);
  else if (fresh && (report.servers ?? []).length > 0) lines.push(`fresh keys in the user list every server reloaded (the bus refuses the old ones): ${fresh}`);
  else if (fresh && listApplied(report)) lines.push(`fresh keys in the user list the broker's holder applied (the bus refuses the old ones): ${fresh}`);
  else if (fresh) lines.push(`fresh keys in the user list sent, live once the broker's holder applies it; no report in this push says it did, so the bus may still admit the old ones: ${fresh}`);
  const provisions = report.freshProvisions ?? [];
  if (provisions.length > 0) lines.push(`fresh provision secrets in these declarations (the provider grants only them once applied): ${provisions.map((p) => `${p.provision} of ${p.seat} for ${p.consumer}`).join(", ")}`);
  lines.push(...serverLines(report.servers ?? []));
  if (report.controllerRotation) lines.push(`the controller's own rotated key: ${report.controllerRotation}`);
  for (const refused of report.raised.refused) lines.push(`not raised: ${refused.reason}`);
  if (report.timedOut.length > 0) lines.push(`no report from: ${report.timedOut.join(", ")}`);
  if (report.boundHit) lines.push(`stopped after ${report.rounds} rounds: the records kept changing (bounded by the node count)`);
  if (report.dryRun && report.declarations) {
    for (const declaration of report.declarations) lines.push(JSON.stringify(declaration, null, 2));
  }
  return lines;
}

/**
 * Whether the report's own outcomes say the broker's holder applied the user list this push sent
 * (R50), when it names no server of a cluster (R60: there each server's own outcome is the word
 * renderPush goes by): the controller's rotated key `applied` is the broker's report; `pending` is its absence.
 * Else the lines of the broker's holders (`holdsUserList`): each `applied`, or `unchanged` by a
 * report it stored before. Without them (a reply cut to fit left them out, R59, or a controller
 * of an earlier release) the list counts as applied only when no line (every node's, by `counts`
 * when a reply was cut) is still `sent` (not waited for), `timed-out` or `failed`.
 */
export function listApplied(report: PushShown): boolean {
  if (report.controllerRotation !== undefined) return report.controllerRotation === "applied";
  const holders = report.nodes.filter((n) => n.holdsUserList === true);
  if (holders.length > 0) return holders.every((n) => n.outcome === "applied" || (n.outcome === "unchanged" && n.reportedAt !== undefined));
  const unconfirmed: readonly NodeOutcome[] = ["sent", "timed-out", "failed"];
  if (report.counts) return unconfirmed.every((outcome) => (report.counts?.[outcome] ?? 0) === 0);
  return !report.nodes.some((n) => unconfirmed.includes(n.outcome));
}

/**
 * What a push left undone, one line each naming what and the fix: no user list reached the bus
 * (R49), a server of a cluster missed the list (R60), a node refused, failed or timed out (R30,
 * R32; a cut reply's counts, R59, name the ones it does not show), a module left out of its node's
 * declaration (it has no credential yet). Empty when everything it sent applied, or was not waited
 * for. A dry run's user-list refusal is not a shortfall: nothing was sent.
 */
export function shortfallsOf(report: PushShown): string[] {
  const lines: string[] = [];
  if (report.userList !== undefined && !report.dryRun) lines.push(`no user list reached the bus (${report.userList.code}): ${report.userList.message}`);
  lines.push(...(report.servers ?? []).filter((s) => !s.ok).map(missedServerLine));
  let shown = 0;
  for (const n of report.nodes) {
    if (n.outcome === "refused" || n.outcome === "failed" || n.outcome === "timed-out") {
      shown += 1;
      const why = n.refusal ? `${n.refusal.code}: ${n.refusal.message}` : n.error;
      lines.push(`node ${n.node} ${n.outcome}${why ? `: ${why}` : ""}`);
    }
    for (const m of n.modulesLeftOut ?? []) lines.push(`module ${m.module} left out of ${n.node}'s declaration: ${m.reason}`);
  }
  // A cut reply (R59) keeps those nodes first, and its counts cover every node.
  const { refused = 0, failed = 0, "timed-out": timedOut = 0 } = report.counts ?? {};
  const unshown = refused + failed + timedOut - shown;
  if (unshown > 0) lines.push(`${unshown} more node(s) refused, failed or timed out, not shown: see ${report.omitted?.nodes?.see ?? "`mesh reports`"}`);
  return lines;
}

/**
 * Exit code of a push, `mesh push`'s and `mesh up`'s alike: 1 when it left anything undone
 * (shortfallsOf: a node refused, failed or timed out, a module left out, no user list reached the
 * bus, a server of a cluster missed the list), else 0.
 */
export function exitOf(report: PushShown): number {
  return shortfallsOf(report).length > 0 ? EXIT_REFUSED : EXIT_OK;
}

/**
 * What `mesh push` says when no reply came: the two waits, and why asking again is safe (a push
 * carries no command id: a second one composes again and sends only what is still behind, R31).
 */
export function pushTimeoutMessage(timeoutMs: number): string {
  return `no reply to push within ${timeoutMs + PUSH_REPLY_MARGIN_MS} ms (--timeout ${timeoutMs} ms for the nodes' reports + ${PUSH_REPLY_MARGIN_MS} ms for composing and sending); `
    + "the push may still be running (see the controller's log): `mesh push --wait` again is safe, it sends only what is still behind (R31)";
}

/**
 * What `mesh push` says when the bus closed its connection before the reply came (the transport's
 * `closed`), one line each: the push was asked for and its outcome is unknown here, with where to
 * read it and why pushing again is safe (R31); when the bus no longer admits the key of `file`
 * (`keyRefused`: a rotation took it away, most likely made live by this very push's user list,
 * R50), which credential file to use now (`useNow`, credentialFileNow: `pending` when the new key
 * is kept beside it as `<file>.next`), else where the new key was kept. `reason`: the bus's reason
 * otherwise, when known. `user`: the bus user of `file`. Pure.
 */
export function pushClosedMessage(closed: { file: string; configured?: string; user: string; keyRefused: boolean; reason?: string; useNow?: { file: string; pending: boolean } }): string {
  const operatorPrefix = busUser("operator", "");
  const name = closed.user.startsWith(operatorPrefix) ? closed.user.slice(operatorPrefix.length) : "<name>";
  const lines = closed.keyRefused
    ? [`push asked for, but the bus closed this connection before the controller's reply came: it no longer admits the key in ${closed.file} (Authorization Violation), which a rotation (\`mesh credential rotate operator ${name}\`) took away; most likely this very push installed the user list that carries the new key`]
    : [`push asked for, but the bus closed this connection before the controller's reply came${closed.reason ? ` (${closed.reason})` : ""}`];
  lines.push("its outcome is unknown here: `mesh nodes` shows what each node was last sent and applied (`mesh history node <node>` names the push that sent it), and `mesh push --wait` again is safe: it sends only what is still behind (R31)");
  if (!closed.keyRefused) return lines.join("\n");
  const now = closed.useNow;
  const how = now === undefined || now.file === closed.file
    ? ""
    : now.file === (closed.configured ?? now.file)
    ? " (the configured credential file: leave --credential out)"
    : " (the default credential file: leave --credential out and MESH_CREDENTIAL unset)";
  if (now === undefined) lines.push(`use the credential file beside which \`mesh credential rotate operator ${name}\` kept the new key (as <file>.next, which mesh dials when the bus refuses the file's own key); ${closed.file} holds a key the bus refuses`);
  else if (now.pending) lines.push(`use ${now.file}${how}: the new key is kept beside it in ${now.file}.next, which mesh dials when the bus refuses the file's own key, then moves over it`);
  else lines.push(`use ${now.file}${how}: it holds the new key; ${closed.file} holds one the bus refuses`);
  return lines.join("\n");
}

export const PUSH_CLI_VERB: CliVerb = {
  path: ["push"],
  verb: "push",
  examples: [["send every node its declaration and wait for their reports", "mesh push --wait"], ["only node alpha", "mesh push alpha"]],
  globals: QUERY_GLOBALS,
  globalHelp: {
    timeout: `milliseconds --wait waits for the nodes' reports (MESH_TIMEOUT_MS); the controller's reply is awaited that long + ${PUSH_REPLY_MARGIN_MS} ms (composing and sending)`,
  },
  summary: VERBS.push.summary,
  exitCodes: "0 sent (and applied, with --wait); 1 a node refused, failed or timed out, a module left out, a server missed the user list, or none reached the bus; "
    + "2 a usage or connection error, or no reply: timed out, or the bus closed the connection (as when this push takes away the key of the credential file): the push may have run, `mesh nodes` shows what each node was sent and applied",
  arguments: [{ name: "node", description: "nodes to send even when not behind", optional: true, variadic: true }],
  options: [
    { flags: "--wait", description: `wait up to --timeout ms for each sent node's report of the applied declaration; the reply is awaited --timeout + ${PUSH_REPLY_MARGIN_MS} ms (composing and sending)` },
    { flags: "--dry-run", description: "print the compositions, secrets redacted; send nothing" },
    { flags: "--progress", description: "print the controller's progress lines on stderr (default: when stderr is a terminal and without --json)" },
  ],
  async run(ctx: CliContext, args, options) {
    const nodes = (args[0] as string[] | undefined) ?? [];
    const wait = options.wait === true;
    const nc = await ctx.connection();
    const showProgress = options.progress === true || (ctx.io.stderr.isTTY === true && !ctx.globals.json);
    // Progress comes on a subject inside this operator's own inbox (R33), subscribed before asking.
    const subject = showProgress ? progressSubject(loadCredential(ctx.globals.credential).user, randomUUID()) : undefined;
    const progress = subject === undefined ? undefined : nc.subscribe(subject, { callback: (error, m) => { if (!error) ctx.err(`mesh push: ${m.string()}`); } });
    // `mesh compose <node...>` asks for the whole mesh and shows the named nodes: a node named in a
    // push is sent even when not behind (R31), so naming it would make every one read "would send".
    const narrow = options.onlyNamed === true;
    const body = {
      nodes: narrow ? [] : nodes, wait, dryRun: options.dryRun === true,
      ...(wait ? { timeoutMs: ctx.globals.timeoutMs } : {}),
      ...(subject === undefined ? {} : { progressSubject: subject }),
    };
    let reply: Answer<"push">;
    try {
      reply = await meshClient(nc, ctx.asker(), {}, seenMemory(ctx.globals.credential, ctx.err)).push(body, { timeoutMs: ctx.globals.timeoutMs + PUSH_REPLY_MARGIN_MS });
    } catch (error) {
      if (error instanceof CommandTransportError && error.code === "timeout") {
        throw new CommandTransportError("timeout", pushTimeoutMessage(ctx.globals.timeoutMs), { cause: error });
      }
      if (error instanceof CommandTransportError && error.code === "closed") {
        const file = ctx.globals.credential;
        // The bus's reason, when it reached the client; else the bus is asked: does it refuse this key now?
        const keyRefused = isAuthorizationRefusal(error) || await busRefusesKeyOf(file, ctx.globals.timeoutMs);
        const useNow = keyRefused ? credentialFileNow(file, ctx.config.credentialFile) : undefined;
        const reason = error.cause instanceof Error ? error.cause.message.split("\n")[0] : undefined;
        throw new CommandTransportError("closed", pushClosedMessage({
          file, configured: ctx.config.credentialFile, user: ctx.asker(), keyRefused, ...(reason === undefined ? {} : { reason }), ...(useNow === undefined ? {} : { useNow }),
        }), { cause: error });
      }
      throw error;
    } finally {
      progress?.unsubscribe();
    }
    const unshown = reply.ok && narrow && nodes.length > 0 ? namedNotShown(reply, nodes, (await import("../push/pushCommand.ts")).notEnrolled) : null;
    if (unshown !== null) reply = { ok: false, v: reply.v, error: unshown };
    if (!reply.ok) {
      if (ctx.globals.json) printData(ctx, reply);
      ctx.err(`mesh ${narrow ? "compose" : "push"}: refused (${reply.error.code})${refusalText(reply.error)}`);
      return EXIT_REFUSED;
    }
    // `mesh compose <node>` shows that node alone; a push (and compose without names) shows every node.
    const report: PushShown = narrow ? onlyNamed(reply, nodes) : reply;
    if (ctx.globals.json) printData(ctx, report);
    else for (const line of renderPush(report, viewOf(ctx))) ctx.out(line);
    return exitOf(report);
  },
};
