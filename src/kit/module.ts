import { existsSync } from "node:fs";
import { checkServerIdentity, type PeerCertificate } from "node:tls";
import { connect, nkeyAuthenticator, type Msg, type NatsConnection, type NodeConnectionOptions, type Status, type Subscription } from "@nats-io/transport-node";
import { jetstream, type JetStreamClient, type JsMsg } from "@nats-io/jetstream";
import { ADMIT_PAUSE_MS, ADMIT_TRIES, dialAdmitted } from "../bus/admitted.ts";
import { ENV_FILE, ModuleEnvError, moduleSettings, readModuleEnv, type ModuleSettings } from "./env.ts";

/**
 * A module author's kit: what a TypeScript or JavaScript module needs to live on the mesh, read
 * from the env its node's agent gives it (R57). It dials the bus with ordinary TLS verification
 * against the mesh CA (R71), signs in with its nkey seed, uses only the inbox the mesh grants it
 * (R33), binds its durable consumers by name (no JetStream manager, no stream lookup: both are
 * refused to a module), and submits and emits with a message id so a retry is never doubled.
 *
 *     const mesh = await connectModule();
 *     mesh.answer("greet", (request) => ({ hello: request.name }));
 *     await mesh.work(async (item) => { ...; await mesh.emit("greeted", item); });
 */

/** How connectModule finds the module's env and the bus. */
export type ConnectModuleOptions = {
  /** The variables (default: `process.env` when it names the bus, else the `env` file below). */
  env?: Record<string, string | undefined>;
  /** The env file read when `env` is not given and the process's environment names no bus (default `./env`). */
  envFile?: string;
  /**
   * The host actually dialled instead of the env's (an SSH tunnel, a test on one machine); the bus is
   * still verified as the env's host names it.
   */
  dialHost?: string;
  /** The client's name on the bus (default the module's user). */
  name?: string;
  /** Milliseconds the first dial may take (default 5,000). */
  timeoutMs?: number;
  /**
   * Where each bus status line goes (a disconnect, a reconnect, a refusal such as `authorization
   * violation`), one bounded line each; default stderr, which its node's agent keeps in its log
   * (R72); `false` for none.
   */
  log?: ((line: string) => void) | false;
};

/** A JSON message as a handler gets it: its decoded body and the message id it was sent with. */
export type Delivery = { data: unknown; subject: string; id: string | undefined };
/** What to stop: a consumer's loop or a tool's subscription. */
export type Stop = () => Promise<void>;

/** A module connected to the mesh. Every method throws ModuleEnvError when its env grants no such thing. */
export type MeshModule = {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly settings: ModuleSettings;
  /**
   * Submits work of `kind` to a seat the module uses (MESH_SUBMITS; `seat` when two seats accept
   * that kind). `id` becomes the `Nats-Msg-Id`: the bus keeps one copy of a retried submit with
   * the same id (its duplicate window, two minutes by default); without one, a retry is a second
   * item. Resolves to the stream's sequence and whether it was a duplicate.
   */
  submit(kind: string, data: unknown, options?: { id?: string; seat?: string }): Promise<{ seq: number; duplicate: boolean }>;
  /** Emits `event` of a seat the module claims (MESH_EMITS), with `id` as its message id when given. */
  emit(event: string, data: unknown, options?: { id?: string; seat?: string }): Promise<{ seq: number; duplicate: boolean }>;
  /**
   * Pulls the module's work queue (MESH_WORK; `seat` when it claims several): `handler` runs for
   * each item one at a time; the item is acknowledged when it resolves. When it throws, the error
   * is logged and the item redelivered after a pause (redeliveryDelayMs), not at once.
   */
  work(handler: (item: Delivery) => Promise<void> | void, options?: { seat?: string }): Promise<Stop>;
  /** Follows `event` (MESH_FOLLOWS) through the module's own durable consumer, as `work` does. */
  follow(event: string, handler: (event: Delivery) => Promise<void> | void, options?: { seat?: string }): Promise<Stop>;
  /**
   * Answers the tool `tool` (MESH_TOOLS): `handler`'s result is the JSON reply; a throw replies
   * `{ "error": message }`. Instances of one module share the requests (a queue group).
   */
  answer(tool: string, handler: (request: unknown) => Promise<unknown> | unknown): Stop;
  /** Drains the connection: what was received is handled, then it closes. */
  close(): Promise<void>;
};

type NodeTlsOptions = NonNullable<NodeConnectionOptions["tls"]>;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function encode(data: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(data ?? null));
}

/** A body as JSON, or as text when it is none. */
function decode(bytes: Uint8Array): unknown {
  const text = decoder.decode(bytes);
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The env's variables: the given ones, the process's when they name the bus, else the env file. */
function envOf(options: ConnectModuleOptions): Record<string, string | undefined> {
  if (options.env !== undefined) return options.env;
  if (options.envFile === undefined && process.env.MESH_BROKER_ADDRESS !== undefined) return process.env;
  const file = options.envFile ?? ENV_FILE;
  if (!existsSync(file)) throw new ModuleEnvError("MESH_BROKER_ADDRESS", `no env given and no ${file} here: run the module in its folder, or with its env`);
  return readModuleEnv(file);
}

/**
 * The one entry of `entries` matching `match` (and `seat` when given). Throws ModuleEnvError naming
 * `variable` and what it does grant (each entry as `show` writes it) otherwise.
 */
function pick<T extends { seat: string }>(entries: readonly T[], variable: string, what: string, match: (entry: T) => boolean, show: (entry: T) => string, seat?: string): T {
  const found = entries.filter((entry) => match(entry) && (seat === undefined || entry.seat === seat));
  if (found.length === 1) return found[0]!;
  const why = found.length === 0 ? "grants no" : "grants more than one (pass seat)";
  const grants = entries.length === 0 ? "it grants none" : `it grants ${entries.map(show).join(", ")}`;
  throw new ModuleEnvError(variable, `${variable} ${why} ${what}${seat === undefined ? "" : ` of seat ${seat}`} (${grants}): its manifest says what the module may do`);
}

/** The longest status line the kit writes: a server's error text is bounded before it reaches a log. */
const STATUS_LINE_CHARS = 200;

/** One line saying what a bus status event is, or undefined for the ones not worth a line (pings). */
export function statusLine(status: Status): string | undefined {
  if (status.type === "ping") return undefined;
  const detail = status.type === "error" ? status.error.message : "server" in status ? status.server : "";
  return `mesh-kit: bus ${status.type}${detail === "" ? "" : `: ${detail}`}`.replace(/\s+/g, " ").slice(0, STATUS_LINE_CHARS);
}

/** Writes each status event of `nc` as statusLine until it closes. */
async function logStatus(nc: NatsConnection, log: (line: string) => void): Promise<void> {
  for await (const status of nc.status()) {
    const line = statusLine(status);
    if (line !== undefined) log(line);
  }
}

/** The first pause before an item whose handler threw is delivered again, and the longest (ms). */
const REDELIVERY_FIRST_MS = 1_000;
const REDELIVERY_MAX_MS = 60_000;

/**
 * The pause before an item whose handler threw is delivered again, by how often it was delivered
 * (1 the first time): 1 s, doubled per delivery, at most a minute. Without it a handler that always
 * throws took its item again at once, some 20,000 times a minute, and filled its log. Pure.
 */
export function redeliveryDelayMs(deliveryCount: number): number {
  return Math.min(REDELIVERY_MAX_MS, REDELIVERY_FIRST_MS * 2 ** Math.min(16, Math.max(0, deliveryCount - 1)));
}

/** Runs `handler` over a durable pull consumer bound by name, acking each message it handled. */
async function consume(js: JetStreamClient, stream: string, name: string, handler: (delivery: Delivery) => Promise<void> | void, log: (line: string) => void): Promise<Stop> {
  // consumers.get asks CONSUMER.INFO of this one consumer only: granted to its owner (R2).
  const consumer = await js.consumers.get(stream, name);
  const messages = await consumer.consume();
  const loop = (async () => {
    for await (const message of messages) await handled(message, handler, `${name} handler`, log);
  })();
  return async () => {
    await messages.close();
    await loop;
  };
}

/** Runs `handler` for one message: acks it, or logs why it threw and naks it for redeliveryDelayMs. */
async function handled(message: JsMsg, handler: (delivery: Delivery) => Promise<void> | void, what: string, log: (line: string) => void): Promise<void> {
  try {
    await handler({ data: decode(message.data), subject: message.subject, id: message.headers?.get("Nats-Msg-Id") || undefined });
    message.ack();
  } catch (error) {
    const delivery = message.info.deliveryCount;
    const delay = redeliveryDelayMs(delivery);
    const why = (error instanceof Error ? error.message : String(error)).replace(/\s+/g, " ").slice(0, STATUS_LINE_CHARS);
    log(`mesh-kit: the ${what} threw on ${message.subject} (delivery ${delivery}): ${why}; it is delivered again in ${delay / 1000} s`);
    message.nak(delay);
  }
}

/**
 * Connects a module to the mesh from its env (see ConnectModuleOptions). Throws ModuleEnvError
 * naming a variable that is missing or malformed, and nats.js's error when the bus refuses it or
 * cannot be verified (a certificate that does not name the env's host, another CA).
 */
export async function connectModule(options: ConnectModuleOptions = {}): Promise<MeshModule> {
  const settings = moduleSettings(envOf(options));
  const log = options.log ?? ((line: string) => { process.stderr.write(`${line}\n`); });
  const write = log === false ? () => undefined : log;
  // A module started beside a push (a reload of the users) may be refused once with a valid key.
  const nc = await dialAdmitted(() => connect({
    servers: `${options.dialHost ?? settings.host}:${settings.port}`,
    name: options.name ?? settings.user,
    authenticator: nkeyAuthenticator(encoder.encode(settings.seed)),
    inboxPrefix: settings.inboxPrefix,
    // Ordinary verification, chain and name, against the mesh CA alone (R71); the name is the
    // env's host even when dialHost is dialled instead.
    tls: { caFile: settings.caFile, checkServerIdentity: (_dialled: string, peer: PeerCertificate) => checkServerIdentity(settings.host, peer) } as NodeTlsOptions,
    timeout: options.timeoutMs ?? 5_000,
    maxReconnectAttempts: -1,
  }), (attempt) => write(`mesh-kit: the bus refused the first connect (try ${attempt} of ${ADMIT_TRIES}), as it does to a connection still in its handshake while it reloads its users: dialling again in ${ADMIT_PAUSE_MS} ms`));
  // A refusal after a reconnect (`authorization violation`) shows only as a status: said in the log.
  if (log !== false) void logStatus(nc, log);
  const js = jetstream(nc);
  const publish = async (subject: string, data: unknown, id: string | undefined) => {
    const ack = await js.publish(subject, encode(data), id === undefined ? {} : { msgID: id });
    return { seq: ack.seq, duplicate: ack.duplicate };
  };
  return {
    nc, js, settings,
    // async: a kind the env does not grant rejects the promise, as a refused publish does.
    submit: async (kind, data, { id, seat } = {}) =>
      publish(pick(settings.submits, "MESH_SUBMITS", `work of kind ${kind}`, (e) => e.kind === kind, (e) => `${e.kind} of seat ${e.seat}`, seat).subject, data, id),
    emit: async (event, data, { id, seat } = {}) =>
      publish(pick(settings.emits, "MESH_EMITS", `event ${event}`, (e) => e.event === event, (e) => `${e.event} of seat ${e.seat}`, seat).subject, data, id),
    work: (handler, { seat } = {}) => {
      const entry = pick(settings.work, "MESH_WORK", "work queue", () => true, (e) => `the queue of seat ${e.seat}`, seat);
      return consume(js, entry.stream, entry.consumer, handler, write);
    },
    follow: (event, handler, { seat } = {}) => {
      const entry = pick(settings.follows, "MESH_FOLLOWS", `event ${event}`, (e) => e.event === event, (e) => `${e.event} of seat ${e.seat}`, seat);
      return consume(js, entry.stream, entry.consumer, handler, write);
    },
    answer: (tool, handler) => {
      const entry = settings.tools.find((e) => e.tool === tool);
      if (entry === undefined) throw new ModuleEnvError("MESH_TOOLS", `MESH_TOOLS has no tool ${tool}: its manifest's tools say what the module answers`);
      const subscription: Subscription = nc.subscribe(entry.subject, { queue: tool, callback: (error, message) => { if (!error) void reply(message, handler); } });
      return async () => { subscription.unsubscribe(); };
    },
    close: () => nc.drain(),
  };
}

/**
 * Answers one tool request with `handler`'s result, or `{ error }` when it throws or its result is
 * not JSON (a BigInt, a cycle): a bad answer is the caller's error, never the module's crash.
 */
async function reply(message: Msg, handler: (request: unknown) => Promise<unknown> | unknown): Promise<void> {
  let body: Uint8Array;
  try {
    body = encode(await handler(decode(message.data)));
  } catch (error) {
    body = encode({ error: error instanceof Error ? error.message : String(error) });
  }
  message.respond(body);
}
