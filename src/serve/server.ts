/**
 * The command server (DESIGN.md section 3, issue 3): the controller's side of commandSubject(principal, verb) (R51).
 *
 * For each request, in arrival order: the asker and the verb from the subject
 * (commandOfSubject, R51: the bus lets each principal publish under its own name
 * only), the reply subject checked to lie in that asker's own inbox (else the request is logged and
 * dropped), the JSON body, the verb's zod schema, the envelope filled once (command id, time, actor, fresh
 * secrets), `decide` inside the catalogue's fenced transaction, and one reply:
 * `{ ok: true, duplicate, sequence, ...reply }` or `{ ok: false, error: { code, message, field? } }`.
 * Adapter errors map to reply codes in one function (replyErrorOf). Nothing here logs a password
 * or a hash, and no reply carries a hash or a mesh-key-sealed secret.
 */
import { type Msg, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import type { z } from "zod";
import {
  COMMAND_QUEUE, COMMAND_SUBJECTS, commandOfSubject, inboxPrefix,
} from "../names.ts";
import type { Commit } from "../events/index.ts";
import { readCommits, type Catalogue } from "../records/catalogue.ts";
import type { SequencedCommit } from "../projections/index.ts";
import { isNodePublicKey, newFreshSecret, sealToNode } from "../crypto/secrets.ts";
import type { ComposeConfig } from "../compose/types.ts";
import { QueryRefused, type CommandDefinition, type Envelope, type FreshSecret, type QueryContext, type QueryDefinition, type Refusal, type Reply, type ReplyTools } from "../commands/envelope.ts";
import { appliedSequence, type State } from "../projections/index.ts";
import { parseRequest, parseRequestBody } from "../commands/validation.ts";
import { commandRequest } from "../records/reuse.ts";
import { pageOf } from "../commands/paging.ts";
import {
  CommandId, PageRequest, VERBS, VERB_NAMES, isVerb,
  type CommandVerb, type ParsedRequestOf, type QueryVerb, type ShellVerb, type Verb, type VerbContract,
} from "../contracts/verbs.ts";
import { versionRefusal } from "../contracts/version.ts";
import { boundedText, dropsOf, errorLine, total, type DropLog } from "../bus/total.ts";
import { definitionOf } from "../commands/index.ts";
import type { SeenVouch } from "../commands/seen.ts";
import { weighSeen } from "./serverSeen.ts";
import { DELIVERY_BOUND_MS, deliverReply, encodeReply, stamped } from "./serverReplies.ts";

import { CommandFailed, replyErrorOf } from "./replyErrors.ts";
import { commandReply, failure, queryReply, spread, withoutSecrets } from "./replyShapes.ts";

// The names the server has always exported, where callers find them (their homes are the files above).
export { DELIVERY_BOUND_MS, deliverReply, stamped };
export { CommandFailed, replyErrorOf, commandReply, queryReply, spread, withoutSecrets };

/** Decodes request bodies (UTF-8); one for the server, not one per request. */
const decoder = new TextDecoder();

/** The largest command body the server reads: the bus's default max_payload, 1 MiB. */
export const MAX_COMMAND_BYTES = 1024 * 1024;

/** Where the server writes what it did. Lines never contain a password, hash or sealed secret. */
export type ServerLog = { info(line: string): void; error(line: string): void };

/** What the shell lends the server: the mesh key, the clock, ids and a log. */
export type ServeDependencies = {
  /** Seals a fresh secret (an nkey seed) with the mesh key, for the records. */
  sealSecret(secret: string): string;
  /** Opens a secret sealed with the mesh key (replies seal it again, to a node's key). */
  openSecret(sealed: string): string;
  now(): Date;
  /** A new command id for requests that bring none. */
  newId(): string;
  log: ServerLog;
  /** The controller's composition settings, lent to queries that compose (`explain`, R19). */
  compose?: ComposeConfig;
  /** R68: vouches for a folded sequence and checks an asker's claim; without it `seen` is neither sent nor believed. */
  seen?: SeenVouch;
  /** Hears each answered command: its verb as asked, `ok` or the refusal's code, and its seconds (metrics, discovery stats). */
  commandDone?: (verb: string, outcome: string, seconds: number) => void;
};

/** Stops taking requests, finishes the one in hand, and resolves. */
export type CommandServer = { stop(): Promise<void> };

/** The request body: the verb's fields plus an optional command id (idempotency key, src/contracts/verbs.ts). */
export { CommandId };

/** Every verb the server answers, sorted, for the `unknown-verb` message: the registry's, and the shell verbs `shell` serves. */
export function knownVerbs(shell: ShellVerbs = {}): string[] {
  return VERB_NAMES.filter((verb) => definitionOf(verb) !== undefined || Object.hasOwn(shell, verb)).sort();
}

/** Whether `verb` is one the controller's shell serves (push, reports, replay). */
function isShellVerb(verb: string): verb is ShellVerb {
  return isVerb(verb) && VERBS[verb].kind === "shell";
}

/**
 * Whether `reply` lies in the own inbox of the bus user `principal` (`_INBOX_<principal>.` and at
 * least one more token), R51 with R33. The actor of a command is the principal token of its subject,
 * which the server enforces (each principal may publish commands only under its own name); the
 * reply subject is the asker's claim, so it must agree: a reply anywhere else (another principal's
 * inbox, the shared `_INBOX.`, or a subject the controller may publish such as the records or the
 * JetStream API) would make the controller write where the asker cannot, under its own grants.
 */
export function replyInAskersInbox(principal: string, reply: string | undefined): boolean {
  if (!reply) return false;
  const own = `${inboxPrefix(principal)}.`;
  return reply.startsWith(own) && reply.length > own.length && !/[\s*>]/.test(reply);
}

/**
 * The commits `keep` accepts, in stream order, from `fromSequence` (default 1) to `toSequence`, each validated
 * (readCommits). This is a scan of the whole CATALOGUE: fine for an operator's query (`history`),
 * which wants every event about an entity wherever its commit was filed; not for a hot path.
 * Throws InvalidEvent naming the sequence of a stored commit that fails its schema.
 */
export async function scanCommits(nc: NatsConnection, toSequence: number, keep: (commit: Commit) => boolean, fromSequence = 1): Promise<SequencedCommit[]> {
  const kept: SequencedCommit[] = [];
  if (toSequence < Math.max(1, fromSequence)) return kept;
  await readCommits(nc, Math.max(1, fromSequence), (batch) => {
    for (const sequenced of batch) if (keep(sequenced.commit)) kept.push(sequenced);
  }, { toSequence });
  return kept;
}

function freshSecret(deps: ServeDependencies): FreshSecret {
  return newFreshSecret(deps.sealSecret);
}

/** The bus's max payload when the connection does not say (nats-server's default, 1 MiB). */
const DEFAULT_MAX_PAYLOAD = 1024 * 1024;

/** Takes `limit` and `continue` out of a list verb's request fields (R59), validated (PageRequest). */
function splitPaging(fields: Record<string, unknown>): { ok: true; page: PageRequest; rest: Record<string, unknown> } | { ok: false; refusal: Refusal } {
  const { limit, continue: token, ...rest } = fields;
  const parsed = parseRequest(PageRequest, { ...(limit === undefined ? {} : { limit }), ...(token === undefined ? {} : { continue: token }) });
  if (!parsed.ok) return parsed;
  return { ok: true, page: parsed.value, rest };
}

/** Checks the shell makes for the pure schemas (they have no crypto): a real node key. */
function shellRefusal(verb: string, command: unknown): Refusal | null {
  const publicKey = (command as { publicKey?: unknown }).publicKey;
  if (verb === "node.enrol" && typeof publicKey === "string" && !isNodePublicKey(publicKey)) {
    return { code: "invalid-request", message: "\"publicKey\": not an X25519 public key (base64 SPKI DER): pass the key the host agent printed", field: "publicKey" };
  }
  return null;
}

/** How a request was asked, besides its verb's fields: the asker (R51), the command id it gave, its dry run. */
export type Asked = { actor: string; commandId?: string; dryRun?: boolean };

/**
 * A verb the controller's shell serves itself (push, reports, replay): its request as its contract
 * parsed it, and how it was asked. It runs beside the command loop, not in it, so a long push
 * does not hold up commands.
 */
export type ShellHandler<V extends ShellVerb> = (request: ParsedRequestOf<V>, asked: Asked) => Promise<Reply>;

/** The shell verbs a controller serves, by verb; one it does not serve is answered `unknown-verb`. */
export type ShellVerbs = { readonly [V in ShellVerb]?: ShellHandler<V> };

/** A request through the first half of the one path: its verb, the fields its schema reads, how it was asked. */
type Decoded = { verb: Verb; fields: Record<string, unknown>; commandId?: string; dryRun?: boolean };

/**
 * The first half of the one path every verb takes (R65): the size, the verb, one JSON object
 * nested at most MAX_JSON_DEPTH deep, the contract's version (`v`), then the envelope fields
 * `commandId` and `dryRun` taken out and checked. `dryRun` stays among the fields of a shell verb
 * that takes no dry run of its own kind (push reads it as its own field). Pure.
 */
export function decodeRequest(askedVerb: string, data: Uint8Array): { ok: true; decoded: Decoded } | { ok: false; reply: Reply } {
  if (data.length > MAX_COMMAND_BYTES) {
    return { ok: false, reply: failure("payload-too-large", `the request is ${data.length} bytes; commands are at most ${MAX_COMMAND_BYTES} bytes: split it`) };
  }
  if (!isVerb(askedVerb)) return { ok: false, reply: failure("unknown-verb", `no command "${askedVerb}": the controller answers ${knownVerbs().join(", ")}`) };
  const read = parseRequestBody(decoder.decode(data));
  if (!read.ok) return { ok: false, reply: { ok: false, error: read.refusal } };
  // The contract's version first (src/contracts): a client of another version hears about `v`.
  const version = versionRefusal("verbs", read.body);
  if (version) return { ok: false, reply: { ok: false, error: version } };
  const contract: VerbContract = VERBS[askedVerb];
  const ownsDryRun = contract.kind === "shell" && !contract.dryRun;
  const { commandId, v: _version, ...rest } = read.body;
  const { dryRun, ...fields } = ownsDryRun ? { dryRun: undefined, ...rest } : rest;
  if (commandId !== undefined && !CommandId.safeParse(commandId).success) {
    return { ok: false, reply: failure("invalid-request", "\"commandId\": use 1 to 128 letters, digits, dots, dashes, colons or underscores, or leave it out", "commandId") };
  }
  if (dryRun !== undefined && typeof dryRun !== "boolean") {
    return { ok: false, reply: failure("invalid-request", "\"dryRun\": true (decide, append nothing) or false, or leave it out", "dryRun") };
  }
  return {
    ok: true,
    decoded: {
      verb: askedVerb,
      fields: ownsDryRun && rest.dryRun !== undefined ? { ...fields, dryRun: rest.dryRun } : fields,
      ...(typeof commandId === "string" ? { commandId } : {}),
      ...(typeof dryRun === "boolean" ? { dryRun } : {}),
    },
  };
}

/**
 * Handles one request body for `verb` asked by `actor` (the bus user of the subject's principal
 * token, R51) and returns the reply: the one path of every verb, command, query or shell
 * (decodeRequest, the asker's `seen` weighed, R68, the fields parsed by the verb's contract,
 * then decide, answer or the shell's handler from `shell`). Exposed for tests and the bench;
 * serveCommands calls it for each message whose reply lies in the actor's own inbox.
 */
export async function handleCommand(
  nc: NatsConnection,
  catalogue: Catalogue,
  deps: ServeDependencies,
  verb: string,
  data: Uint8Array,
  actor: string,
  shell: ShellVerbs = {},
): Promise<Reply> {
  const decoded = decodeRequest(verb, data);
  if (!decoded.ok) return decoded.reply;
  const { fields, ...asked } = decoded.decoded;
  // R68: the asker's `seen` is evidence, weighed before the verb, and vouched for in its reply.
  const seen = await weighSeen(nc, catalogue, deps.seen, actor, fields, deps.log);
  if (!seen.ok) return { ok: false, error: seen.refusal };
  const how: Asked = { actor, ...(asked.commandId === undefined ? {} : { commandId: asked.commandId }), ...(asked.dryRun === undefined ? {} : { dryRun: asked.dryRun }) };
  return seen.vouched(await answerRequest(nc, catalogue, deps, asked.verb, seen.rest, how, shell));
}

/** The request's own part (see handleCommand): its fields parsed by its contract, then decide, answer or the shell's handler. */
async function answerRequest(
  nc: NatsConnection,
  catalogue: Catalogue,
  deps: ServeDependencies,
  verb: Verb,
  fields: Record<string, unknown>,
  asked: Asked,
  shell: ShellVerbs,
): Promise<Reply> {
  const def = definitionOf(verb);
  if (def === undefined) {
    const parsed = parseFields(verb, VERBS[verb].request, fields);
    return parsed.ok ? serveShellVerb(verb, parsed.value, asked, shell, deps) : { ok: false, error: parsed.refusal };
  }
  if (def.kind === "command") {
    const parsed = parseFields(verb, def.schema, fields);
    return parsed.ok ? decideCommand(nc, catalogue, deps, def, parsed.value, asked) : { ok: false, error: parsed.refusal };
  }
  // List verbs (R59) take `limit` and `continue` beside their own fields.
  const paging = def.page !== undefined ? splitPaging(fields) : null;
  if (paging && !paging.ok) return { ok: false, error: paging.refusal };
  const parsed = parseFields(verb, def.schema, paging ? paging.rest : fields);
  return parsed.ok ? answerQuery(nc, catalogue, deps, def, parsed.value, paging ? paging.page : null) : { ok: false, error: parsed.refusal };
}

/** A verb's fields parsed by its contract's schema (`invalid-request` naming the field), then the checks the shell makes (shellRefusal). */
function parseFields<Schema extends z.ZodType>(verb: Verb, schema: Schema, fields: Record<string, unknown>): { ok: true; value: z.output<Schema> } | { ok: false; refusal: Refusal } {
  const parsed = parseRequest(schema, fields);
  if (!parsed.ok) return parsed;
  const refused = shellRefusal(verb, parsed.value);
  return refused ? { ok: false, refusal: refused } : parsed;
}

/** A shell verb's reply from its handler, errors mapped by replyErrorOf (the detail to the log only). */
async function serveShellVerb(verb: Verb, request: ParsedRequestOf<Verb>, asked: Asked, shell: ShellVerbs, deps: ServeDependencies): Promise<Reply> {
  const handler = isShellVerb(verb) ? (shell[verb] as ShellHandler<ShellVerb> | undefined) : undefined;
  if (handler === undefined) return failure("unknown-verb", `this controller does not serve "${verb}": it answers ${knownVerbs(shell).join(", ")}`);
  try {
    return await handler(request as ParsedRequestOf<ShellVerb>, asked);
  } catch (error) {
    deps.log.error(`command ${verb} by ${asked.actor} failed: ${errorLine(error)}`);
    return { ok: false, error: replyErrorOf(error) };
  }
}

/** A query's reply: answered from the state, or from the records (`fromCommits`), one page of a list verb (R59). */
async function answerQuery(
  nc: NatsConnection, catalogue: Catalogue, deps: ServeDependencies, def: QueryDefinition, request: ParsedRequestOf<QueryVerb>, page: PageRequest | null,
): Promise<Reply> {
  const state = await catalogue.catchUp();
  if (def.fromCommits) {
    // Answered from the records (history): a scan of the commits up to the folded sequence.
    const { concerns, answer, since } = def.fromCommits;
    const commits = await scanCommits(nc, state.sequence, (commit) => concerns(commit, request), since?.(state, request) ?? 1);
    const answered = answer(commits, request);
    if (answered instanceof QueryRefused) return { ok: false, error: answered.refusal };
    return queryReply(state.sequence, spread(withoutSecrets(answered)));
  }
  const context: QueryContext = deps.compose === undefined ? {} : { compose: deps.compose };
  const answered = def.answer(state, request, context);
  if (answered instanceof QueryRefused) return { ok: false, error: answered.refusal };
  const answer = spread(answered);
  if (def.page === undefined || page === null) return queryReply(state.sequence, answer);
  const paged = pageOf(def.verb, def.page, answer, page, nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD);
  if (!paged.ok) return { ok: false, error: paged.refusal };
  return queryReply(state.sequence, paged.value);
}

/** A command's reply: the envelope filled once, decide inside the fenced transaction (or its dry run), the reply built. */
async function decideCommand(
  nc: NatsConnection, catalogue: Catalogue, deps: ServeDependencies, def: CommandDefinition, request: ParsedRequestOf<CommandVerb>, asked: Asked,
): Promise<Reply> {
  // The envelope is filled once: a fenced-out decide runs again with the same id, time and secrets.
  const commandId = asked.commandId ?? deps.newId();
  const secrets: FreshSecret[] = [];
  const envelope: Envelope = { commandId, actor: asked.actor, now: deps.now().toISOString(), secrets };
  if (asked.dryRun === true) return dryRunOf(await catalogue.catchUp(), def, request, envelope, deps);
  // R53: what this id is used for, recorded with the commit and compared on a duplicate.
  const recorded = commandRequest(def.verb, request);
  try {
    const result = await catalogue.transact(commandId, (state) => {
      const needed = def.secretsNeeded(state, request);
      while (secrets.length < needed) secrets.push(freshSecret(deps));
      return def.decide(state, request, envelope);
    }, recorded);
    if (!result.ok) return { ok: false, error: result.refusal };
    const tools: ReplyTools = { openSecret: deps.openSecret, sealToNode };
    const answer = spread(def.reply(result.state, result.events, tools, result.entity, request));
    return commandReply(def, commandId, result, answer, nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD);
  } catch (error) {
    // R76: past here the commit may be on the records; whatever failed, the answer names the id.
    throw new CommandFailed(commandId, error);
  }
}

/**
 * A command's dry run (`dryRun: true`): the same decide on the state caught up to the records'
 * end, nothing appended. The reply is `{ ok: true, dryRun: true, commandId, wouldAppendAfter,
 * events }` with every hash, password and sealed secret taken out of the events (R3), or the
 * refusal the command would get. A command id already applied answers `duplicate: true` and no
 * events, as the real command would append nothing.
 */
export function dryRunOf(state: State, def: CommandDefinition, command: ParsedRequestOf<CommandVerb>, envelope: Envelope, deps: ServeDependencies): Reply {
  const base = { ok: true as const, dryRun: true, commandId: envelope.commandId, wouldAppendAfter: state.sequence };
  if (appliedSequence(state, envelope.commandId) !== undefined) return { ...base, duplicate: true, events: [] };
  const needed = def.secretsNeeded(state, command);
  const secrets = envelope.secrets as FreshSecret[];
  while (secrets.length < needed) secrets.push(freshSecret(deps));
  const decision = def.decide(state, command, envelope);
  if (!decision.ok) return { ok: false, error: decision.refusal };
  return { ...base, ...(decision.unchanged ? { unchanged: true } : {}), entity: decision.entity, events: withoutSecrets(decision.events) };
}

/**
 * Serves every principal's commands, COMMAND_SUBJECTS, in the queue group
 * COMMAND_QUEUE (a second controller stands by) until `stop()`. The shell verbs of `shell` are
 * served by their handlers (ShellHandler) beside the loop, through the same path (handleCommand). Requests are handled one at a time, in arrival order;
 * each gets exactly one reply (see handleCommand). The actor is the subject's principal token (R51).
 * A request without a reply subject, or whose reply subject is not in that principal's own inbox,
 * is logged and dropped: nothing is decided, nothing appended, nothing sent. Dropped, not refused:
 * the only address the request gives is its reply subject, and answering there would publish into
 * someone else's inbox or onto a subject the controller's grants allow (the records, the JetStream
 * API); the asker, whoever it is, times out, and the log says why. Errors never stop the server:
 * they become replies through replyErrorOf. R65: the handler is total (src/bus/total.ts): a
 * message on a subject it does not serve (the bus delivers a pulled JetStream message to any reply
 * subject, keeping its stored subject) or one whose handling throws is dropped, said in one bounded
 * line, rate-limited per reason (dropsOf); the loop goes on.
 */
export function serveCommands(
  nc: NatsConnection,
  catalogue: Catalogue,
  deps: ServeDependencies,
  shell: ShellVerbs = {},
): CommandServer {
  const subscription: Subscription = nc.subscribe(COMMAND_SUBJECTS, { queue: COMMAND_QUEUE });
  // R65: every drop is one bounded, rate-limited line, and nothing a message does ends the loop.
  const serving: Serving = { nc, catalogue, deps, shell, drop: dropsOf(deps.log), stopping: new AbortController(), inFlight: new Set() };
  const serve = total((m: Msg) => serveOne(serving, m), (error, m: Msg) => {
    serving.drop("command-failed", `a message on ${boundedText(m.subject)}: dropped, its handler failed: ${errorLine(error)} (R65)`);
  });
  const loop = (async () => {
    try {
      for await (const m of subscription) await serve(m);
    } catch (error) {
      deps.log.error(`the command subscription ended: ${errorLine(error)}`);
    }
  })();
  return {
    stop: async () => {
      if (!subscription.isClosed()) await subscription.drain();
      await loop;
      // A reply nobody hears is not sent again after the stop: the handlers end, not the bound.
      serving.stopping.abort();
      await Promise.all([...serving.inFlight]);
    },
  };
}

/** What serving one message needs: the server's parts, its drop log, its stop signal, and the shell verbs still running. */
type Serving = {
  nc: NatsConnection;
  catalogue: Catalogue;
  deps: ServeDependencies;
  shell: ShellVerbs;
  drop: DropLog;
  stopping: AbortController;
  inFlight: Set<Promise<void>>;
};

/** A message that passed the asker checks: who asked, the verb as asked and as logged (bounded), its reply subject. */
type Admitted = { actor: string; askedVerb: string; verb: string; reply: string };

/** One message of the loop: admitted (or dropped), then a shell verb beside the loop or any other verb in it. */
async function serveOne(serving: Serving, m: Msg): Promise<void> {
  const asked = admit(m, serving.drop);
  if (asked === null) return;
  const started = performance.now();
  const done = (reply: Reply) => serving.deps.commandDone?.(asked.askedVerb, reply.ok ? "ok" : reply.error.code, (performance.now() - started) / 1000);
  if (isShellVerb(asked.askedVerb)) serveBeside(serving, m, asked, done);
  else await serveInLoop(serving, m, asked, done);
}

/**
 * The asker and verb of `m` (R51), or null when it is dropped with one line (R65): not a command
 * subject, no reply subject, or a reply subject outside the asker's own inbox (R33).
 */
function admit(m: Msg, drop: DropLog): Admitted | null {
  const asked = commandOfSubject(m.subject);
  if (!asked) {
    drop("command-subject", `a message on ${boundedText(m.subject)} reached the command subscription: dropped, not a command subject ${COMMAND_SUBJECTS} (R51, R65)`);
    return null;
  }
  const { principal: actor, verb: askedVerb } = asked;
  const verb = boundedText(askedVerb, 64);
  if (!m.reply) {
    drop("command-no-reply", `command ${verb} by ${actor}: dropped, no reply subject`);
    return null;
  }
  if (!replyInAskersInbox(actor, m.reply)) {
    drop("command-foreign-reply", `command ${verb} by ${actor}: dropped, its reply subject ${boundedText(m.reply)} is not in ${actor}'s own inbox ${inboxPrefix(actor)}. (R51, R33)`);
    return null;
  }
  return { actor, askedVerb, verb, reply: m.reply };
}

/**
 * A shell verb, run beside the loop so a long push does not hold up commands: its reply delivered
 * until heard, DELIVERY_BOUND_MS or the server's stop, then logged; tracked until it ends.
 */
function serveBeside(serving: Serving, m: Msg, asked: Admitted, done: (reply: Reply) => void): void {
  const { nc, catalogue, deps, shell, drop, stopping, inFlight } = serving;
  const { actor, askedVerb, verb, reply: replyTo } = asked;
  const running = handleCommand(nc, catalogue, deps, askedVerb, m.data, actor, shell).catch((error: unknown): Reply => {
    deps.log.error(`command ${verb} by ${actor} failed: ${errorLine(error)}`);
    return { ok: false, error: replyErrorOf(error) };
  }).then(async (reply) => {
    done(reply);
    const outcome = await deliverReply(nc, replyTo, encodeReply(reply, (line) => deps.log.error(`command ${verb} by ${actor}: ${line}`)), stopping.signal);
    const heard = outcome === "heard" ? "" : outcome === "unheard" ? ` (its reply was not heard: nothing subscribed ${actor}'s reply subject within ${DELIVERY_BOUND_MS} ms)` : " (its reply was still unheard when the server stopped)";
    deps.log.info(`command ${verb} by ${actor}: ${reply.ok ? "ok" : `refused ${reply.error.code}`}${heard}`);
  }).catch((error: unknown) => { drop("command-failed", `command ${verb} by ${actor}: dropped, its handler failed: ${errorLine(error)} (R65)`); });
  inFlight.add(running);
  void running.finally(() => inFlight.delete(running));
}

/** A command or query, in the loop (one at a time, in arrival order): its one reply sent on `m`, then logged. */
async function serveInLoop(serving: Serving, m: Msg, asked: Admitted, done: (reply: Reply) => void): Promise<void> {
  const { nc, catalogue, deps, shell } = serving;
  const { actor, askedVerb, verb } = asked;
  let reply: Reply;
  try {
    reply = await handleCommand(nc, catalogue, deps, askedVerb, m.data, actor, shell);
  } catch (error) {
    reply = { ok: false, error: replyErrorOf(error) };
    deps.log.error(`command ${verb} by ${actor} failed: ${errorLine(error)}`);
  }
  respond(m, reply, deps.log);
  done(reply);
  deps.log.info(
    `command ${verb} by ${actor}: ${reply.ok ? `ok${"sequence" in reply ? ` at ${String(reply.sequence)}` : ""}` : `refused ${reply.error.code}`}`,
  );
}

/** Encodes replies sent on a message; one for the server. */
const encoder = new TextEncoder();

/** Sends `reply` on `m`; a reply that cannot be sent (too large) becomes an `internal` one, the cause in the log. */
function respond(m: Msg, reply: Reply, log: ServerLog): void {
  try {
    m.respond(encoder.encode(JSON.stringify(stamped(reply))));
  } catch (error) {
    log.error(`command ${boundedText(m.subject)}: the reply could not be sent: ${errorLine(error)}`);
    m.respond(encoder.encode(JSON.stringify(stamped(failure("internal", "the reply could not be sent (too large?): see the controller's log")))));
  }
}
