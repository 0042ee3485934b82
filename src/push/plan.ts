/**
 * The push's plan, apart from its effects (issue 12): which nodes to send in a
 * round and in which order, what each node's report line says after the sends and after the wait.
 * Pure: no bus, no clock, no crypto. push.ts carries a plan out (raise, seal, publish, record,
 * wait) and hands what happened back to the functions here.
 */
import type { Refusal } from "../decision.ts";
import type { Declaration, DeclarationResult, ModuleLeftOut } from "../compose/declaration.ts";
import type { Principal } from "../compose/types.ts";
import { credentialOf, everyCredential, holdersOf, isEnrolled, lastSent, nodeCount, nodeNames, nodeOf, nodesOfModule, provisionsInKeyOrder, type State } from "../projections/index.ts";
import { BROKER_SEAT } from "../names.ts";
import { NEW_NODE_BACKOFF_MAX_MS } from "../host/plan.ts";
import { shortDigest } from "../contracts/declaration.ts";

export type NodeOutcome = "sent" | "unchanged" | "refused" | "applied" | "failed" | "timed-out";

/** One node's line of the report. `error` is the node's own report (failed) or the send's failure. */
export type NodeReport = {
  node: string;
  outcome: NodeOutcome;
  digest?: string;
  refusal?: Refusal;
  error?: string;
  /** Modules assigned to the node but left out of what it was sent (no credential yet), and why. */
  modulesLeftOut?: ModuleLeftOut[];
  /**
   * With `wait`, for an `unchanged` node: when the bus stored the node's last report of applying
   * this digest (ISO 8601). That report predates this push: nothing was applied by it (R32, R55).
   */
  reportedAt?: string;
  /**
   * The node holds mesh-broker: its declaration carries the user list (R11), so its own outcome
   * says whether the list this push sent is live (R50).
   */
  holdsUserList?: true;
};

/** R31: the most compose-and-send rounds one push runs: one per node, plus one. */
export function roundBound(state: State): number {
  return nodeCount(state.nodes) + 1;
}

/** What a round saw after it recorded its sends (composeAgain). */
export type RoundEnd = {
  /** The records sequence the round composed from. */
  composedAt: number;
  /** The sequences of the round's own DeclarationSent commits, ascending. */
  recorded: readonly number[];
  /** The sequence the records are folded to after the round. */
  foldedTo: number;
  /** Planned sends that were not sent (their publish failed, or a secret could not be sealed). */
  unsent: number;
};

/**
 * R31: whether a push composes again after a round. Not when every planned send landed and nothing
 * but the round's own records was folded since it composed: composition reads no record of what
 * was sent, so composing again would give the same declarations, each now recorded as sent, and
 * send nothing (a round spent composing 10,000 nodes and raising for nothing). When another commit
 * came in (the records moved under the push) or a node was not sent, it composes again.
 */
export function composeAgain(end: RoundEnd): boolean {
  if (end.unsent > 0) return true;
  if (end.foldedTo !== end.composedAt + end.recorded.length) return true;
  return end.recorded.some((sequence, i) => sequence !== end.composedAt + i + 1);
}

/** The report lines of named nodes that are not enrolled (`unknown-node`, in the order named). */
export function unknownNamed(state: State, named: Iterable<string>): NodeReport[] {
  return [...named].filter((node) => !isEnrolled(state.nodes, node))
    .map((node) => ({ node, outcome: "refused", refusal: { code: "unknown-node", message: `node ${node} is not enrolled` } }));
}

/** A declaration a round sends. */
export type PlannedSend = {
  node: string;
  digest: string;
  /** As composed: secrets sealed with the mesh key (the shell seals them to `publicKey` just before the publish). */
  declaration: Declaration;
  /** The node's public key, as enrolled. */
  publicKey: string;
  /** The records sequence composed from: it travels beside the digest, outside it (R43: hosts report it back). */
  recordsSequence: number;
  /**
   * Behind (R31, R78): the composed digest differs from the one last sent, or (first round) the
   * node's last report is not this declaration applied; false: sent only because it was named.
   */
  behind: boolean;
  /** R78: sent though last sent this very digest, because its last report says it `failed`, is of an `older` digest, or is `missing`. */
  unapplied?: Unapplied;
  /** A broker holder's user list, which travels in the parts `declaration.userList` names before the declaration. */
  userListText?: string;
};

/**
 * R78: each node's last stored report, by the node of its subject: the digest it speaks of and
 * whether it applied it, or null when none is stored (or it does not follow the report contract).
 * A node absent was not read, or its read failed: its report has no say (a bus that cannot answer
 * for a moment must not make a push re-send the whole mesh).
 */
export type LastReported = ReadonlyMap<string, { digest: string; ok: boolean } | null>;

/** R78: why a node last sent its current declaration is behind all the same. */
export type Unapplied = "failed" | "older" | "missing";

/** R78: whether `report` says the node applied `digest`, else why not. */
function unappliedBy(report: { digest: string; ok: boolean } | null | undefined, digest: string): Unapplied | null {
  if (report === undefined) return null;
  if (report === null) return "missing";
  if (report.digest !== digest) return "older";
  return report.ok ? null : "failed";
}

/**
 * R78: the nodes whose last report a push's first round reads (planRound's `reported`): every
 * composed node with a credential that would not be sent anyway (behind by what it was last sent,
 * or named), so a large mesh whose declarations all changed reads no report at all.
 */
export function reportsToRead(state: State, declarations: readonly DeclarationResult[], named: ReadonlySet<string>): string[] {
  return declarations.flatMap((result) => {
    if (!result.ok) return [];
    const { node, digest } = result.declaration;
    if (named.has(node) || !credentialOf(state.credentials, { kind: "node", name: node })) return [];
    return lastSent(state.sent, node)?.digest === digest ? [node] : [];
  });
}

/** R78: how many of `sends` were sent for their report alone, by why (for the push's log). */
export function unappliedCounts(sends: readonly PlannedSend[]): Record<Unapplied, number> {
  const counts: Record<Unapplied, number> = { failed: 0, older: 0, missing: 0 };
  for (const s of sends) if (s.unapplied !== undefined) counts[s.unapplied] += 1;
  return counts;
}

/** What one round does. */
export type RoundPlan = {
  /** In publish order: every broker holder's last (see planRound). Empty: the push is done. */
  sends: PlannedSend[];
  /** Nodes that could not be composed (R30): their line says why; the rest go on. */
  refused: Array<{ node: string; refusal: Refusal }>;
  /** Composed, neither behind nor named in this round: sent nothing. */
  unchanged: Array<{ node: string; digest: string }>;
  /** Per composed node, the modules its composition left out, or null when none (R12). */
  modulesLeftOut: Map<string, ModuleLeftOut[] | null>;
};

/**
 * Plans one round of a push from the state and its composition (R29, R30, R31, R78): every node whose
 * composed digest differs from what the records say it was last sent, in round 0 every node whose
 * last report (`reported`: read for reportsToRead's nodes) is not that declaration applied (failed,
 * older, missing), and in round 0 every named node besides, is sent, empty declarations included
 * (R29). Reports count in round 0 alone: a node sent then has not reported by the next round, and
 * sending it again each round would spin to the bound (R31), so a push re-sends a node for its
 * report once. A node whose agent never runs (no report) is thus sent at every push: CONTROL keeps
 * only the latest declaration per node, so the send replaces the one waiting rather than piling up,
 * and costs what any push that changes every node costs (one publish and one DeclarationSent each),
 * once per push; `reported` omitted, no report is considered. A node that cannot be composed is
 * refused and the rest go on (R30), and so is a node without a credential (noCredential, R12).
 * Broker holders go last (a stable order otherwise): their list
 * reloads the bus, and a node whose credential was rotated should hold its new key (its
 * declaration's `self`) before that reload drops the old one.
 */
export function planRound(state: State, declarations: readonly DeclarationResult[], named: ReadonlySet<string>, round: number, reported?: LastReported): RoundPlan {
  const plan: RoundPlan = { sends: [], refused: [], unchanged: [], modulesLeftOut: new Map() };
  for (const result of declarations) {
    if (!result.ok) {
      plan.refused.push({ node: result.node, refusal: result.refusal });
      continue;
    }
    const { declaration } = result;
    const { node, digest } = declaration;
    if (!credentialOf(state.credentials, { kind: "node", name: node })) {
      plan.refused.push({ node, refusal: noCredential(node) });
      continue;
    }
    plan.modulesLeftOut.set(node, result.modulesLeftOut ?? null);
    const changed = lastSent(state.sent, node)?.digest !== digest;
    const unapplied = !changed && round === 0 && reported !== undefined && !named.has(node) ? unappliedBy(reported.get(node), digest) : null;
    const behind = changed || unapplied !== null;
    if (!behind && !(round === 0 && named.has(node))) {
      plan.unchanged.push({ node, digest });
      continue;
    }
    const send: PlannedSend = { node, digest, declaration, publicKey: nodeOf(state.nodes, node)!.publicKey, recordsSequence: state.sequence, behind };
    if (unapplied !== null) send.unapplied = unapplied;
    if (declaration.userList && result.userListText !== undefined) send.userListText = result.userListText;
    plan.sends.push(send);
  }
  const holders = new Set(holdersOf(state, BROKER_SEAT));
  plan.sends.sort((a, b) => Number(holders.has(a.node)) - Number(holders.has(b.node)));
  return plan;
}

/**
 * The refusal of a node the records hold no credential for (R12): the bus refuses its host, so
 * nothing sent to it could be read, and the fresh secrets its declaration carries would be sealed
 * to a node the mesh no longer admits. An accepted restore revokes a node the bus ran without
 * (removed after the backup, R44); an operator may have revoked it.
 */
function noCredential(node: string): Refusal {
  return {
    code: "no-credential",
    message: `node ${node} has no credential, so the bus refuses it (R12): nothing was sent to it. An accepted restore revokes a node the bus ran without (R44); to bring it back, \`mesh node remove ${node}\` and enrol it again with the new keys \`mesh host init --force\` makes on it (R66: its old keys stay refused)`,
  };
}

/**
 * What a round's sends came to: the sent (neither failed nor refused to seal), and each planned
 * node's line: `refused` (`seal-failed`) when a secret could not be sealed to its key, `failed`
 * when its publish failed, else `sent`.
 */
export function settleRound(
  sends: readonly PlannedSend[],
  failures: ReadonlyMap<string, string>,
  refusedToSeal: ReadonlyMap<string, string>,
): { sent: PlannedSend[]; lines: NodeReport[] } {
  const lines: NodeReport[] = [];
  const sent: PlannedSend[] = [];
  for (const s of sends) {
    const sealError = refusedToSeal.get(s.node);
    const failure = failures.get(s.node);
    if (sealError !== undefined) {
      lines.push({ node: s.node, outcome: "refused", refusal: { code: "seal-failed", message: `a secret for ${s.node} could not be sealed to its key: ${sealError}` } });
    } else if (failure !== undefined) {
      lines.push({ node: s.node, outcome: "failed", error: `not sent: ${failure}` });
    } else {
      lines.push({ node: s.node, outcome: "sent", digest: s.digest });
      sent.push(s);
    }
  }
  return { sent, lines };
}

/**
 * R14: the broker holders whose report confirms the controller's rotated key, each with the
 * digest it must report: the declaration this push sent it, else the one it was sent before (which
 * carries the list). A holder never sent anything is left out: it cannot confirm.
 */
export function rotationBrokers(state: State, sentDigests: ReadonlyMap<string, string>): Array<{ node: string; digest: string }> {
  return holdersOf(state, BROKER_SEAT).flatMap((node) => {
    const digest = sentDigests.get(node) ?? lastSent(state.sent, node)?.digest;
    return digest === undefined ? [] : [{ node, digest }];
  });
}

/**
 * R55: the nodes a wait also waits for though this push did not send them: `unchanged`, with a
 * digest, whose last sent declaration no report is known to have applied yet.
 */
export function unconfirmedNodes(lines: Iterable<NodeReport>, sentDigests: ReadonlyMap<string, string>): string[] {
  const out: string[] = [];
  for (const line of lines) if (line.outcome === "unchanged" && line.digest !== undefined && !sentDigests.has(line.node)) out.push(line.node);
  return out;
}

/**
 * R1: the nodes a push sends their first declaration: never sent one, so no user list the bus ran
 * held their key before this push's (the broker's holders aside: genesis carries the genesis
 * node's key in the first list, R56). Their agents were refused until this push's list and retry
 * with backoff (NEW_NODE_BACKOFF_MAX_MS at most), which judgeWait names when one timed out.
 */
export function firstDeclarations(state: State): Set<string> {
  const brokers = new Set(holdersOf(state, BROKER_SEAT));
  return new Set(nodeNames(state.nodes).filter((node) => !brokers.has(node) && lastSent(state.sent, node) === undefined));
}

/** Why a sent node gave no report within the wait: its first declaration (firstDeclarations), or any other. */
function noReportWhy(first: boolean): string {
  return first
    ? `no report yet of its first declaration: the bus admits this node's key only since this push's user list, and its agent, refused until then, retries every ${NEW_NODE_BACKOFF_MAX_MS / 1000} s at most: \`mesh push --wait\` again waits for it (is its agent running? its log says)`
    : "no report of this declaration within the wait: is its agent running? (`mesh nodes` shows its last report)";
}

/** A node's report of a declaration, as judgeWait reads it. */
export type AppliedReport = { ok: boolean; error?: string };

/** What a wait saw, for judgeWait. */
export type WaitSeen = {
  /** Per node this push sent, the digest sent last. */
  sentDigests: ReadonlyMap<string, string>;
  /** Named nodes sent again the declaration their last stored report says they applied, and when it was stored (R32). */
  appliedBefore: ReadonlyMap<string, { digest: string; at: string }>;
  /** unconfirmedNodes (R55). */
  unconfirmed: readonly string[];
  /** firstDeclarations of the state the push started from (R1). */
  firstSent: ReadonlySet<string>;
  /** The report of the expected digest received from a node, if any. */
  report(node: string): AppliedReport | undefined;
  /** When the bus stored that report, when it came from the stream. */
  storedAt(node: string): string | undefined;
};

/** Nodes whose report a wait awaits: the sent (but those that already reported applying what was sent again, R32), then the unconfirmed (R55). */
export function awaitedNodes(seen: Pick<WaitSeen, "sentDigests" | "appliedBefore" | "unconfirmed">): string[] {
  const already = (node: string) => seen.appliedBefore.get(node)?.digest === seen.sentDigests.get(node);
  return [...[...seen.sentDigests.keys()].filter((node) => !already(node)), ...seen.unconfirmed];
}

/** The first line of a node's error, or `the node could not apply it`. */
function firstLine(error: string | undefined): string {
  return (error ?? "the node could not apply it").split("\n")[0]!;
}

/**
 * R32, R55: each line after the wait, updated in `lines` (by node). A sent node: `unchanged` with
 * `reportedAt` when it was sent again what a report stored before the push says it applied (a
 * stopped agent cannot make a stale report look like a fresh apply); else `applied`, `failed`
 * (its error's first line) or `timed-out` by its report, saying why (a first declaration: the
 * node's backoff, R1). An unconfirmed node: `timed-out` saying
 * no report shows its agent applied it, `failed` by its report, or still `unchanged` with when its
 * report was stored.
 */
export function judgeWait(lines: Map<string, NodeReport>, seen: WaitSeen): void {
  for (const [node, digest] of seen.sentDigests) {
    const line = lines.get(node)!;
    const before = seen.appliedBefore.get(node);
    if (before?.digest === digest && line.outcome === "sent") {
      line.outcome = "unchanged";
      line.reportedAt = before.at;
      continue;
    }
    const answer = seen.report(node);
    if (!answer) {
      line.outcome = "timed-out";
      line.error = noReportWhy(seen.firstSent.has(node));
    } else if (answer.ok) line.outcome = "applied";
    else {
      line.outcome = "failed";
      line.error = firstLine(answer.error);
    }
  }
  for (const node of seen.unconfirmed) {
    const answer = seen.report(node);
    const line = lines.get(node)!;
    if (!answer) {
      line.outcome = "timed-out";
      line.error = `its last declaration ${shortDigest(line.digest!)} was sent by an earlier push and no report says it was applied: is its agent running?`;
    } else if (!answer.ok) {
      line.outcome = "failed";
      line.error = firstLine(answer.error);
    } else {
      const at = seen.storedAt(node);
      if (at !== undefined) line.reportedAt = at;
    }
  }
}

/** The report's node lines, sorted by node, each with the modules its composition left out (if any). */
export function withModulesLeftOut(outcomes: Map<string, NodeReport>, leftOut: Map<string, ModuleLeftOut[]>, state: State): NodeReport[] {
  const holders = new Set(holdersOf(state, BROKER_SEAT));
  return [...outcomes.values()]
    .map((line) => (leftOut.has(line.node) && line.outcome !== "refused" ? { ...line, modulesLeftOut: leftOut.get(line.node)! } : line))
    .map((line) => (holders.has(line.node) ? { ...line, holdsUserList: true as const } : line))
    .sort((a, b) => (a.node < b.node ? -1 : 1));
}

/** Principals whose credential was rotated after records sequence `since` (PushReport.freshCredentials). */
export function freshSince(state: State, since: number): Principal[] {
  return everyCredential(state.credentials)
    .filter((c) => c.rotatedAt !== undefined && c.rotatedAt > since)
    .map((c) => ({ kind: c.principal.kind, name: c.principal.name }))
    .sort((a, b) => (a.kind === b.kind ? (a.name < b.name ? -1 : 1) : a.kind < b.kind ? -1 : 1));
}

/** A provision named by its key's parts (PushReport.freshProvisions). */
export type ProvisionName = { seat: string; provision: string; consumer: string };

/**
 * Provisions whose secret was rotated (R44, R48) after a node that receives or grants it now was
 * last sent a declaration, as `before` (the records when the push began) says: this push's
 * declarations are the first to carry the fresh secret to that node, and the provider grants only
 * it once applied (PushReport.freshProvisions). A provision is carried while its consumer runs
 * somewhere: to the consumer's nodes and to its seat's holders (in `state`). Sorted by seat,
 * provision, consumer. Pure.
 */
export function freshProvisions(state: State, before: State): ProvisionName[] {
  const fresh: ProvisionName[] = [];
  for (const p of provisionsInKeyOrder(state.provisions)) {
    if (p.rotatedAt === undefined) continue;
    const consumers = nodesOfModule(state.assignments, p.consumer);
    if (consumers.length === 0) continue;
    const nodes = new Set([...consumers, ...holdersOf(state, p.seat)]);
    if ([...nodes].some((node) => (lastSent(before.sent, node)?.recordsSequence ?? 0) < p.rotatedAt!)) {
      fresh.push({ seat: p.seat, provision: p.provision, consumer: p.consumer });
    }
  }
  return fresh;
}

/**
 * R49: why no user list reached the bus after a push, or null when one did (a holder of
 * mesh-broker was sent, applied or already held its list): `no-broker-holder` when nothing holds
 * the seat, `user-list-undelivered` naming the holders when each one's declaration was refused,
 * failed or timed out. Pure.
 */
export function userListUndelivered(state: State, nodes: readonly NodeReport[]): Refusal | null {
  const holders = holdersOf(state, BROKER_SEAT);
  if (holders.length === 0) {
    return {
      code: "no-broker-holder",
      message: `no node holds ${BROKER_SEAT}, so no user list was sent and the bus admits no new principal (R49): assign a module claiming ${BROKER_SEAT} to a node and push again`,
    };
  }
  const delivered = holders.some((node) => {
    const outcome = nodes.find((n) => n.node === node)?.outcome;
    return outcome === "sent" || outcome === "applied" || outcome === "unchanged" || outcome === "timed-out";
  });
  if (delivered) return null;
  return {
    code: "user-list-undelivered",
    message: `the user list reached no holder of ${BROKER_SEAT} (${holders.join(", ")}: see their lines above), so the bus keeps its old list (R49)`,
  };
}
