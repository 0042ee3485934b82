import { errors, type NatsConnection } from "@nats-io/transport-node";
import { commandSubject } from "../names.ts";
import { isAuthorizationRefusal, isPayloadTooLarge, isTimeout, transientBusConditionOf } from "../bus/errors.ts";
import { retryNoResponders } from "../bus/retry.ts";
import type { AnyReply as Reply } from "../contracts/verbs.ts";

/**
 * Sending one command to the controller: the library call the CLI and the bench make.
 * A refusal is a reply (`{ ok: false, error }`), not an exception; exceptions are for the
 * transport: nobody answered, the body is too large for the bus, the answer is not a reply.
 */

/**
 * The command could not be sent or answered; `code` says which, the message says what to do.
 * `closed`: the request went out but the bus closed the connection before the reply came, so the
 * command may have been carried out; `cause` is the reason the bus gave (an AuthorizationError when
 * it no longer admits the connection's key, isAuthorizationRefusal), else the request's error.
 */
export class CommandTransportError extends Error {
  override readonly name = "CommandTransportError";
  readonly code: "no-controller" | "timeout" | "payload-too-large" | "bad-reply" | "connection" | "closed";
  /** The command id that was sent, when one was: a retry with `--command-id` of it is safe. */
  readonly commandId: string | undefined;
  constructor(code: CommandTransportError["code"], message: string, options?: { cause?: unknown; commandId?: string }) {
    super(message, options);
    this.code = code;
    this.commandId = options?.commandId;
  }
}

/** Caller settings of sendCommand. */
export type SendOptions = {
  /** Milliseconds to wait for the reply (default 10,000). */
  timeoutMs?: number;
  /** Pauses before sending again a request answered "no responders" (default NO_RESPONDERS_DELAYS_MS, R77). */
  noRespondersDelaysMs?: readonly number[];
};

const encoder = new TextEncoder();

/**
 * Sends `body` (a JSON object: the verb's fields, optionally `commandId`) as a request of the bus
 * user `asker` on `commandSubject(asker, verb)` (R51) and returns the controller's reply. The reply
 * returns on the connection's own inbox prefix (R33: connect with connectToBus), which must be
 * `asker`'s: the controller drops a request whose reply lies outside the asker's inbox. Throws CommandTransportError:
 * `payload-too-large` before sending when the body exceeds the server's max_payload;
 * `no-controller` when nothing serves commands (a request answered "no responders" reached nobody,
 * so it is sent again for a short bounded time first, within `timeoutMs`: a failover is a pause, R77); `timeout` after `timeoutMs`; `bad-reply` when the
 * answer is not a reply object; `closed` when the bus closed the connection under the request
 * (naming why when it said, e.g. it refuses the connection's key, R50); `connection` when the
 * connection was closed before the request was sent.
 */
export async function sendCommand(
  nc: NatsConnection,
  asker: string,
  verb: string,
  body: Record<string, unknown>,
  options: SendOptions = {},
): Promise<Reply> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const data = encoder.encode(JSON.stringify(body));
  const limit = nc.info?.max_payload;
  if (limit !== undefined && data.length > limit) {
    throw new CommandTransportError(
      "payload-too-large",
      `the request is ${data.length} bytes but the bus takes at most ${limit} bytes per message: make it smaller (e.g. register fewer or smaller manifests)`,
    );
  }
  let text: string;
  try {
    const startedAt = Date.now();
    const answer = await retryNoResponders(
      () => nc.request(commandSubject(asker, verb), data, { timeout: Math.max(1, timeoutMs - (Date.now() - startedAt)) }),
      { withinMs: timeoutMs, ...(options.noRespondersDelaysMs ? { delaysMs: options.noRespondersDelaysMs } : {}) },
    );
    text = answer.string();
  } catch (error) {
    // The bus's reason for closing the connection under the request (the request itself says only "connection closed").
    const closedBy = lostUnder(error) ? await closeReasonOf(nc) : undefined;
    throw transportErrorOf(error, asker, verb, timeoutMs, closedBy);
  }
  let reply: unknown;
  try {
    reply = JSON.parse(text);
  } catch (error) {
    throw new CommandTransportError("bad-reply", `the answer to ${verb} is not JSON: is something other than the controller serving ${commandSubject(asker, verb)}?`, { cause: error });
  }
  if (reply === null || typeof reply !== "object" || typeof (reply as { ok?: unknown }).ok !== "boolean") {
    throw new CommandTransportError("bad-reply", `the answer to ${verb} is not a reply ({ ok, ... })`);
  }
  return reply as Reply;
}

/** Milliseconds to wait for the connection to finish closing, for the reason it closed (closeReasonOf). */
const CLOSE_REASON_WAIT_MS = 1_000;

/**
 * Why `nc` closed: the error it closed with (the bus's -ERR, e.g. an AuthorizationError), or
 * undefined when it closed without one or had not finished closing within CLOSE_REASON_WAIT_MS.
 * A request is failed while the client is still closing (before isClosed() says so), hence the wait.
 */
async function closeReasonOf(nc: NatsConnection): Promise<Error | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const bound = new Promise<undefined>((resolve) => { timer = setTimeout(() => resolve(undefined), CLOSE_REASON_WAIT_MS); });
  try {
    const why = await Promise.race([nc.closed(), bound]);
    return why instanceof Error ? why : undefined;
  } finally {
    clearTimeout(timer);
  }
}

/** A request that went out and lost its connection before the reply (not one refused for a connection already closed). */
function lostUnder(error: unknown): boolean {
  return error instanceof errors.RequestError && transientBusConditionOf(error)?.kind === "connection-lost";
}

function transportErrorOf(error: unknown, asker: string, verb: string, timeoutMs: number, closedBy?: Error): CommandTransportError {
  const noResponders = error instanceof errors.NoRespondersError
    || (error instanceof errors.RequestError && error.isNoResponders());
  if (noResponders) {
    return new CommandTransportError("no-controller", `no controller is serving ${commandSubject(asker, verb)}: start it (mesh up) or check the credential's address`, { cause: error });
  }
  if (isTimeout(error)) {
    return new CommandTransportError("timeout", `the controller did not answer ${verb} within ${timeoutMs} ms: retry with --timeout, the same command id makes the retry safe`, { cause: error });
  }
  if (isPayloadTooLarge(error)) {
    return new CommandTransportError("payload-too-large", "the request is larger than the bus takes per message: make it smaller", { cause: error });
  }
  if (lostUnder(error)) {
    const why = closedBy === undefined ? "" : isAuthorizationRefusal(closedBy) ? ": it no longer admits this connection's key (Authorization Violation: a rotation took the key away)" : `: ${closedBy.message.split("\n")[0]}`;
    return new CommandTransportError("closed", `the bus closed the connection before the reply to ${verb} came${why}; the command may have been carried out: a retry with the same command id is safe`, { cause: closedBy ?? error });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new CommandTransportError("connection", `the request ${verb} failed: ${message}`, { cause: error });
}
