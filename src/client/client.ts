import type { NatsConnection } from "@nats-io/transport-node";
import {
  DryRunReply, RefusedReply, Seen, VERBS, VERBS_VERSION, VERB_NAMES,
  type AnyReply, type CommandVerb, type ListVerb, type Refusal, type ReplyOf, type RequestOf, type Verb,
} from "../contracts/verbs.ts";
import { parseContract } from "../contracts/version.ts";
import { sendCommand, type SendOptions } from "./send.ts";

/**
 * The typed client of the controller's verbs (issue 12): one method per verb, each sending the
 * verb's request (src/contracts/verbs.ts) through sendCommand as the bus user `asker` (R51) and
 * parsing the reply with the verb's contract. A refusal is an answer, not an exception:
 * `{ ok: false, error: { code, message, field? } }`. Exceptions are for the transport
 * (CommandTransportError: nobody answered, a timeout, a body too large) and for a reply that does
 * not follow its contract (ContractError: `unsupported-version` naming `v` for a controller of
 * another version, `bad-message` naming the field otherwise).
 */

/**
 * Milliseconds a push's asker waits for its reply beyond the push's own `timeoutMs` (composing and
 * sending): `mesh push --wait` and `mesh up` alike.
 */
export const PUSH_REPLY_MARGIN_MS = 60_000;

/** Caller settings of one call: the command id (idempotency key, R53) and the reply timeout. */
export type CallOptions = SendOptions & { /** Sent as `commandId`; a retry with the same id appends nothing twice. */ commandId?: string };

/** A verb's answer: its accepted reply, or the refusal. */
export type Answer<V extends Verb> = ReplyOf<V> | RefusedReply;

export type { CommandVerb, ListVerb };

/** A verb that takes a dry run: every command, and `replay` (its void and its accepted restore append). */
export type DryRunVerb = { [V in Verb]: (typeof VERBS)[V]["dryRun"] extends true ? V : never }[Verb];

/** The field of each list verb's reply that holds its list (the contract's `list`). */
export const LIST_FIELD = Object.fromEntries(
  VERB_NAMES.flatMap((verb) => { const list = (VERBS[verb] as { list?: string }).list; return list === undefined ? [] : [[verb, list]]; }),
) as { readonly [V in ListVerb]: keyof ReplyOf<V> & string };

/** A verb's method name on the client: `node.enrol` is `nodeEnrol`. */
export type MethodName<V extends string> = V extends `${infer Head}.${infer Tail}` ? `${Head}${Capitalize<MethodName<Tail>>}` : V;

/** The method name of `verb` (MethodName). Pure. */
export function methodName<V extends Verb>(verb: V): MethodName<V> {
  return verb.replace(/\.([a-z])/g, (_, letter: string) => letter.toUpperCase()) as MethodName<V>;
}

/** One verb's method: its request may be left out when none of its fields is required. */
type VerbMethod<V extends Verb> = Record<string, never> extends RequestOf<V>
  ? (request?: RequestOf<V>, options?: CallOptions) => Promise<Answer<V>>
  : (request: RequestOf<V>, options?: CallOptions) => Promise<Answer<V>>;

/** One method per verb of the contract (src/contracts/verbs.ts VERBS), named by methodName. */
export type VerbMethods = { [V in Verb as MethodName<V>]: VerbMethod<V> };

/** The typed client: one method per verb, plus `ask`, `dryRun` and `everyPage` for code generic over verbs. */
export type MeshClient = VerbMethods & {
  /** Sends `verb` with `request` and parses its reply with the verb's contract. */
  ask<V extends Verb>(verb: V, request: RequestOf<V>, options?: CallOptions): Promise<Answer<V>>;
  /** The command's dry run: what it would append, nothing written. */
  dryRun<V extends DryRunVerb>(verb: V, request: RequestOf<V>, options?: CallOptions): Promise<DryRunReply | RefusedReply>;
  /** Every page of a list verb (R59), joined into one reply without a `continue` token; the first refused page as is. */
  everyPage<V extends ListVerb>(verb: V, request?: RequestOf<V>, options?: CallOptions): Promise<Answer<V>>;
};

/**
 * Parses a reply to `verb` as it came off the bus: a refusal with RefusedReply, a dry run's with
 * DryRunReply, any other with the verb's reply contract. Throws ContractError naming the field
 * (and `v` first, for a controller of another version). Exposed for tests and the bench.
 */
export function parseReply<V extends Verb>(verb: V, reply: unknown, dryRun = false): Answer<V> | DryRunReply {
  const what = `the reply to ${verb}`;
  const ok = (reply as { ok?: unknown } | null)?.ok;
  if (ok === false) return parseContract("verbs", RefusedReply, reply, what);
  if (dryRun) return parseContract("verbs", DryRunReply, reply, what);
  return parseContract("verbs", VERBS[verb].reply, reply, what) as ReplyOf<V>;
}

/**
 * R68: where a client keeps the highest records sequence the controller vouched for (`seen`), to
 * send it with every command: `read` the kept one (undefined when none or unreadable), `keep` a
 * higher one (the CLI: a file beside its credential, on the operator's own machine).
 */
export type SeenMemory = { read(): Seen | undefined; keep(seen: Seen): void };

/**
 * A reply as it came, split into the reply its verb's contract reads and the controller's `seen`
 * on it (undefined when it carries none, or one that does not follow Seen). Pure.
 */
export function splitSeen(reply: AnyReply): { reply: AnyReply; seen: Seen | undefined } {
  if (!Object.hasOwn(reply, "seen")) return { reply, seen: undefined };
  const { seen, ...rest } = reply as Record<string, unknown>;
  const parsed = Seen.safeParse(seen);
  return { reply: rest as AnyReply, seen: parsed.success && parsed.data.tag !== undefined ? parsed.data : undefined };
}

/** Whether `reply` is a controller's refusal of the `seen` field itself (one of a release before R68). Pure. */
export function refusesSeen(reply: AnyReply): boolean {
  return reply.ok === false && reply.error.code === "invalid-request" && reply.error.field === "seen";
}

/**
 * The client of the controller for the bus user `asker` (the principal of `nc`'s credential, R51),
 * over `nc` (connected with connectToBus, so replies come back on the asker's own inbox, R33).
 * `defaults` apply to every call unless the call says otherwise. With `memory`, every request
 * carries the highest records sequence seen (`seen`, R68; `{ sequence: 0 }` when none yet) and a
 * reply's higher one is kept; a controller that refuses the field (an older release) is asked
 * again without it, and not sent it again by this client.
 */
export function meshClient(nc: NatsConnection, asker: string, defaults: SendOptions = {}, memory?: SeenMemory): MeshClient {
  let sendsSeen = memory !== undefined;
  const send = async (verb: Verb, request: object, options: CallOptions, dryRun: boolean): Promise<unknown> => {
    const { commandId, ...sendOptions } = options;
    const body: Record<string, unknown> = {
      v: VERBS_VERSION,
      ...request,
      ...(commandId === undefined ? {} : { commandId }),
      ...(dryRun ? { dryRun: true } : {}),
    };
    const seenNow = sendsSeen ? memory?.read() ?? { sequence: 0 } : undefined;
    let reply = await sendCommand(nc, asker, verb, seenNow === undefined ? body : { ...body, seen: seenNow }, { ...defaults, ...sendOptions });
    if (seenNow !== undefined && refusesSeen(reply)) {
      sendsSeen = false;
      reply = await sendCommand(nc, asker, verb, body, { ...defaults, ...sendOptions });
    }
    const split = splitSeen(reply);
    if (memory !== undefined && split.seen !== undefined && split.seen.sequence > (seenNow?.sequence ?? 0)) memory.keep(split.seen);
    return parseReply(verb, split.reply, dryRun);
  };
  const ask = async <V extends Verb>(verb: V, request: RequestOf<V>, options: CallOptions = {}): Promise<Answer<V>> =>
    (await send(verb, request, options, false)) as Answer<V>;
  const everyPage = async <V extends ListVerb>(verb: V, request: RequestOf<V> = {} as RequestOf<V>, options: CallOptions = {}): Promise<Answer<V>> => {
    const field = LIST_FIELD[verb];
    let whole: unknown[] = [];
    let token: string | undefined;
    for (;;) {
      const page = await ask(verb, (token === undefined ? request : { ...request, continue: token }) as RequestOf<V>, options);
      if (!page.ok) return page;
      whole = [...whole, ...((page as Record<string, unknown>)[field] as unknown[])];
      token = page.continue;
      if (token === undefined) return { ...page, [field]: whole } as Answer<V>;
    }
  };
  return {
    ask,
    dryRun: async (verb, request, options = {}) => (await send(verb, request, options, true)) as DryRunReply | RefusedReply,
    everyPage,
    ...verbMethods(ask),
  };
}

/** One method per verb, each asking it with `ask` (an absent request is `{}`). */
function verbMethods(ask: <V extends Verb>(verb: V, request: RequestOf<V>, options?: CallOptions) => Promise<Answer<V>>): VerbMethods {
  return Object.fromEntries(VERB_NAMES.map((verb) => [
    methodName(verb),
    (request: RequestOf<typeof verb> | undefined, options?: CallOptions) => ask(verb, request ?? ({} as RequestOf<typeof verb>), options),
  ])) as VerbMethods;
}

/** A refused answer as an error, for callers that stop at the first refusal (`mesh up`). */
export class Refused extends Error {
  override readonly name = "Refused";
  readonly code: string;
  readonly field: string | undefined;
  readonly verb: Verb;
  constructor(verb: Verb, refusal: Refusal) {
    super(`the controller refused ${verb} (${refusal.code}): ${refusal.message}`);
    this.verb = verb;
    this.code = refusal.code;
    this.field = refusal.field;
  }
}

/** The accepted reply of an answer, or throws Refused with its code and field. */
export function accepted<V extends Verb>(verb: V, answer: Answer<V>): ReplyOf<V> {
  if (answer.ok === false) throw new Refused(verb, answer.error);
  return answer as ReplyOf<V>;
}
