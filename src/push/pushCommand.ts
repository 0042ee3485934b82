import { MAX_PUSH_WAIT_MS, PushRequest, type PushReply as PushReplyContract } from "../contracts/verbs.ts";
import type { Refusal, Reply } from "../commands/envelope.ts";
import type { ShellHandler } from "../serve/server.ts";
import { inboxPrefix } from "../names.ts";
import { isEnrolled, type NodesState } from "../projections/index.ts";
import { fitReply, type BoundedList, type Omitted } from "../commands/fit.ts";
import type { NodeOutcome, NodeReport, PushLog, PushOptions, PushReport } from "./push.ts";

/** The verb of a push request, sent on `commandSubject(asker, PUSH_VERB)` (R51). */
export const PUSH_VERB = "push";

/** The bus's max payload when the connection does not say (nats-server's default, 1 MiB). */
const DEFAULT_MAX_PAYLOAD = 1024 * 1024;



/** How many nodes of a push ended in each outcome (only outcomes that occurred). */
export type OutcomeCounts = Partial<Record<NodeOutcome, number>>;

/**
 * The reply of a push: `{ ok: true, ...PushReport, counts }`, within the bus's max payload (R59):
 * `counts` always covers every node; when the whole report does not fit, its growing lists are cut
 * (pushReply) and `omitted` says per list how many items were left out and where to read them.
 */
export type PushReply = PushReplyContract;

export { MAX_PUSH_WAIT_MS, PushRequest };

/**
 * The report push() returns is the push reply's body (src/contracts/verbs.ts): a compile-time
 * check that the two never drift apart while push.ts keeps its own type.
 */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : never) : never;
const reportIsTheReply: Same<{ ok: true } & PushReport & { counts: OutcomeCounts; omitted?: Record<string, Omitted> }, Omit<PushReply, "v">> = true;
void reportIsTheReply;

/** Outcomes of nodes that need the operator's attention: kept first when the node lines are cut. */
const ATTENTION: ReadonlySet<NodeOutcome> = new Set(["refused", "failed", "timed-out"]);

/**
 * The reply to a push within `budgetBytes` (the connection's max payload, R59; a 10,000-node
 * report passes the default 1 MiB). Whole while it fits; else cut by fitReply, most expendable
 * first: a dry run's declarations, then the node lines (those refused, failed or timed out kept
 * ahead of the others), the timed-out names, the fresh credentials, the principals left out.
 * `counts` per outcome is always whole. Where the rest is read: `mesh history push <pushId>` (what
 * this push sent), `mesh reports` (each node's last report), `mesh explain`, `mesh credentials`.
 * Pure.
 */
export function pushReply(report: PushReport, budgetBytes: number): PushReply {
  const counts: OutcomeCounts = {};
  for (const line of report.nodes) counts[line.outcome] = (counts[line.outcome] ?? 0) + 1;
  const sent = `\`mesh reports\` (each node's last report: applied, failed) and \`mesh history push ${report.pushId}\` (what this push sent)`;
  const lists: BoundedList[] = [
    { field: "declarations", see: "`mesh explain` (a principal's grants and the manifest line and record allowing each)" },
    { field: "nodes", see: sent, first: (line) => ATTENTION.has((line as NodeReport).outcome) || ((line as NodeReport).modulesLeftOut?.length ?? 0) > 0 },
    { field: "timedOut", see: "`mesh reports` (each node's last report)" },
    { field: "freshCredentials", see: "`mesh credentials`" },
    { field: "overlaps", see: "`mesh credentials`" },
    { field: "freshProvisions", see: "`mesh history seat <seat>` (each provision's rotations)" },
    { field: "leftOut", see: "`mesh explain` for one principal" },
  ];
  return fitReply({ ok: true, ...report, counts }, lists, budgetBytes) as unknown as PushReply;
}

/**
 * The named nodes that are not enrolled (`enrolled`: the state's nodes), as a refusal
 * `unknown-node` on field `nodes` naming them and `mesh nodes`; null when every one is enrolled.
 * A push naming an unknown node (a typo, say) is refused before anything is composed or sent, so
 * the operator's mistake never sends every other node as a side effect (R31). Pure.
 */
export function unknownNamedNodes(named: readonly string[], enrolled: NodesState): Refusal | null {
  const unknown = [...new Set(named)].filter((node) => !isEnrolled(enrolled, node));
  return unknown.length === 0 ? null : notEnrolled(unknown);
}

/**
 * The refusal `unknown-node` (field `nodes`) naming `unknown`, nodes that are not enrolled, and
 * `mesh nodes`: what `mesh push <node>` is answered and `mesh compose <node>` says alike. Pure.
 */
export function notEnrolled(unknown: readonly string[]): Refusal {
  return {
    code: "unknown-node",
    field: "nodes",
    message: `${unknown.join(", ")} ${unknown.length === 1 ? "is" : "are"} not enrolled (\`mesh nodes\` lists the nodes); nothing was sent`,
  };
}

/**
 * The `push` verb as the command server serves it (serveCommands' shell verbs: the request parsed
 * by its contract, PushRequest, an unknown field refused there naming it) and replies with the report of `run` (the controller's push, which runs one push at a time).
 * The reply fits `maxPayload()` (the connection's max payload, R59: pushReply).
 * A body field the schema does not know is refused `invalid-request` naming it. With `enrolled`
 * (the caught-up state's nodes), a named node that is not enrolled is refused `unknown-node`
 * (field `nodes`) before `run` is called: nothing is appended or sent (unknownNamedNodes).
 */
export function pushVerb(
  run: (options: PushOptions) => Promise<PushReport>,
  log: PushLog,
  publish?: (subject: string, line: string) => void,
  enrolled?: () => Promise<NodesState>,
  maxPayload: () => number | undefined = () => undefined,
): ShellHandler<"push"> {
  return async (request, { actor }): Promise<Reply> => {
    const subject = request.progressSubject;
    if (subject !== undefined && !isInInboxOf(actor, subject)) {
      return {
        ok: false,
        error: { code: "invalid-request", field: "progressSubject", message: `progress goes to your own inbox only: a subject under ${inboxPrefix(actor)}. (R33)` },
      };
    }
    if (enrolled !== undefined && request.nodes.length > 0) {
      const unknown = unknownNamedNodes(request.nodes, await enrolled());
      if (unknown !== null) return { ok: false, error: unknown };
    }
    log.info(`push requested by ${actor}${request.nodes.length ? ` for ${request.nodes.join(", ")}` : ""}${request.dryRun ? " (dry run)" : ""}`);
    const say = subject === undefined || publish === undefined ? undefined : progressLines(subject, publish, request.wait);
    say?.line(request.dryRun ? "composing (dry run)" : "composing and sending");
    const report = await run({
      nodes: request.nodes,
      wait: request.wait,
      dryRun: request.dryRun,
      ...(request.timeoutMs === undefined ? {} : { timeoutMs: request.timeoutMs }),
      ...(say === undefined ? {} : { progress: say.progress }),
    });
    return pushReply(report, maxPayload() ?? DEFAULT_MAX_PAYLOAD) as unknown as Reply;
  };
}

/**
 * True when `subject` lies inside `actor`'s own inbox (`_INBOX_<actor>.…`). The controller may
 * publish into every operator's inbox (its reply grants, controllerReplyInboxes), so a progress
 * subject taken on trust would let one operator have the controller write lines into another
 * operator's inbox, even onto the subject of a reply that operator awaits: the controller would
 * break R33 for them. The actor is read from the request's reply inbox, which the asker alone
 * can subscribe, so this check confines progress to the asker.
 */
export function isInInboxOf(actor: string, subject: string): boolean {
  const prefix = `${inboxPrefix(actor)}.`;
  return subject.length > prefix.length && subject.startsWith(prefix);
}

/** Short progress lines published on `subject` (never a secret, R3); publishing failures are ignored. */
function progressLines(subject: string, publish: (subject: string, line: string) => void, wait: boolean) {
  const line = (text: string) => {
    try { publish(subject, text); } catch { /* progress is best effort */ }
  };
  return {
    line,
    progress: (done: number, total: number) => {
      line(`sent ${done} of ${total} declaration(s)`);
      if (done === total && wait) line("waiting for the nodes' reports");
    },
  };
}
