/**
 * What an error from the NATS client means, in one place (issue 12): classified by the client's own
 * error classes (`errors.AuthorizationError`, `errors.TimeoutError`, ...) and the JetStream API's
 * error codes (`JetStreamApiError.code`, the server's `err_code`), never by message text (the two
 * exceptions, max_payload and the authentication timeout, say why, and so does a request lost to its connection). Each function walks the `cause` chain, so an error wrapped by
 * our own adapters (BusConnectError, CommandTransportError) is classified by what it wraps. Pure.
 */
import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import { errors } from "@nats-io/nats-core";

/**
 * Why a dial failed (BusConnectError's `kind`): `unauthorized` (the bus refused the credential's
 * key or password), `refused` (nothing listens at the address), `timeout` (no answer in time),
 * `certificate` (the bus presented another certificate than the pinned one, R34), `setup` (the
 * credential or address cannot be dialled as written), `other`.
 */
export type BusConnectKind = "unauthorized" | "refused" | "timeout" | "certificate" | "setup" | "other";

/** `error` and the errors of its `cause` chain, outermost first (at most 8 deep). */
function* causes(error: unknown): Generator<unknown> {
  for (let e: unknown = error, depth = 0; e !== undefined && e !== null && depth < 8; e = (e as { cause?: unknown }).cause, depth += 1) {
    yield e;
    if (!(e instanceof Error)) return;
  }
}

/**
 * True when `error` (or its cause chain) is the bus's `Authentication Timeout`: it closed the
 * connection because the client's CONNECT (the signed nonce) came too late, as in a reconnect storm
 * on a loaded machine. nats.js gives it the AuthorizationError class (AuthorizationError.parse
 * matches "authentication timeout"), so only its text tells it apart: matched here alone, as the
 * server writes it. No verdict on the credential (isAuthorizationRefusal is false for it).
 */
export function isAuthenticationTimeout(error: unknown): boolean {
  for (const e of causes(error)) {
    if (e instanceof errors.AuthorizationError && /authentication timeout/i.test(e.message)) return true;
  }
  return false;
}

/**
 * True when `error` (or its cause chain) is the bus refusing the credential: AuthorizationError or
 * UserAuthenticationExpiredError, but not an authentication timeout (isAuthenticationTimeout: the
 * credential was not looked at in time, which says nothing of whether the list holds its key, R50).
 */
export function isAuthorizationRefusal(error: unknown): boolean {
  if (isAuthenticationTimeout(error)) return false;
  for (const e of causes(error)) {
    if (e instanceof errors.AuthorizationError || e instanceof errors.UserAuthenticationExpiredError) return true;
    if ((e as { kind?: unknown }).kind === "unauthorized") return true; // a BusConnectError of that kind
  }
  return false;
}

/**
 * True for what a dial meets when the bus closed it in its handshake: nats-server 2.9.10,
 * reloading its users, closes every client whose CONNECT it has not read yet (server/reload.go,
 * reloadAuthorization) with an authorization violation, which the client reads, or before the
 * client has written its CONNECT (EPIPE) or read the answer (ECONNRESET). A key the bus does not
 * hold meets the same violation: only a second dial tells them apart.
 */
export function isClosedInHandshake(error: unknown): boolean {
  for (const e of causes(error)) {
    if (e instanceof errors.AuthorizationError) return true;
    const code = (e as { code?: unknown }).code;
    if (code === "EPIPE" || code === "ECONNRESET") return true;
  }
  return false;
}

/** True when `error` (or its cause chain) is the client's TimeoutError. */
export function isTimeout(error: unknown): boolean {
  for (const e of causes(error)) if (e instanceof errors.TimeoutError) return true;
  return false;
}

/** True when `error` (or its cause chain) is a socket refused (`ECONNREFUSED`) or the client's "connection refused". */
function isConnectionRefused(error: unknown): boolean {
  for (const e of causes(error)) {
    if ((e as { code?: unknown }).code === "ECONNREFUSED") return true;
    if (e instanceof errors.ConnectionError && e.message === "connection refused") return true;
  }
  return false;
}

/**
 * A dial's failure classified: its kind (see BusConnectKind) and a short reason for the message,
 * never including connection options (no password, R3).
 */
export function dialFailureOf(error: unknown): { kind: BusConnectKind; reason: string } {
  if (isConnectionRefused(error)) return { kind: "refused", reason: "connection refused (is the bus running at this address?)" };
  if (isAuthenticationTimeout(error)) return { kind: "timeout", reason: "the bus did not get the credential in time (Authentication Timeout: the bus or this machine is overloaded)" };
  if (isAuthorizationRefusal(error)) return { kind: "unauthorized", reason: "the bus refused the credential's key or password (Authorization Violation)" };
  if (isTimeout(error)) return { kind: "timeout", reason: "timed out (is the address reachable?)" };
  if (!(error instanceof Error)) return { kind: "other", reason: "unknown error" };
  return { kind: "other", reason: error.message.split("\n")[0] ?? "" };
}

/** The JetStream API's error code (`err_code`, e.g. 10071) of `error` or its cause chain; undefined when it is no JetStreamApiError. */
export function jetStreamCodeOf(error: unknown): number | undefined {
  for (const e of causes(error)) if (e instanceof JetStreamApiError) return e.code;
  return undefined;
}

/** A fenced publish or KV update found another last sequence than expected (10071, 10164): someone else wrote first. */
export function isWrongLastSequence(error: unknown): boolean {
  const code = jetStreamCodeOf(error);
  return code === JetStreamApiCodes.StreamWrongLastSequence || code === JetStreamApiCodes.StreamWrongLastSequenceUnknown;
}

/** The consumer asked for does not exist (10014). */
export function isConsumerNotFound(error: unknown): boolean {
  return jetStreamCodeOf(error) === JetStreamApiCodes.ConsumerNotFound;
}

/** The stream asked for does not exist (10059). */
export function isStreamNotFound(error: unknown): boolean {
  return jetStreamCodeOf(error) === JetStreamApiCodes.StreamNotFound;
}

/**
 * A publish or request larger than the server's max_payload. The client throws a plain
 * InvalidArgumentError for it (`'payload' max_payload size exceeded`) with no class or code of its
 * own, so its text is the one thing to go by: matched here alone.
 */
export function isPayloadTooLarge(error: unknown): boolean {
  for (const e of causes(error)) if (e instanceof errors.InvalidArgumentError && e.message.includes("max_payload")) return true;
  return false;
}

/**
 * What made a bus operation fail for a moment (transientBusConditionOf): `timeout` (no answer in
 * time), `no-responders` (nothing subscribed the JetStream API: a reload, a stream without a leader
 * yet), `jetstream-unavailable` (the API said so: 503, a cluster electing a leader), `connection-lost`
 * (the connection closed or dropped under the request, or was draining).
 */
export type TransientBusKind = "timeout" | "no-responders" | "jetstream-unavailable" | "connection-lost";

/**
 * JetStream API error codes that say "not now", not "no": 10008 JetStream system temporarily
 * unavailable and 10009 cluster can not handle request (a cluster electing its meta or a stream's
 * leader), 10039 and 10076 JetStream not enabled (said while a reload re-enables it).
 */
const UNAVAILABLE_FOR_NOW = new Set([10008, 10009, 10039, 10076]);

/**
 * nats.js rejects a request whose connection closes or drops under it with a RequestError of its
 * own making and no class or cause that says so (muxsubscription's close, protocol's disconnect):
 * its text is the one thing to go by, matched here alone and exactly.
 */
const LOST_REQUEST_MESSAGES = new Set(["connection closed", "connection disconnected"]);

/**
 * When `error` (or its cause chain) is a bus condition that passes, the kind and one line saying
 * which (never connection options, R3), so a caller can say "send it again" instead of reporting a
 * fault: a TimeoutError; no responders (NoRespondersError, a RequestError made of one, the
 * jetstream client's JetStreamNotEnabled); a JetStream API error with status 503 or a code in
 * UNAVAILABLE_FOR_NOW; a ClosedConnectionError, DrainingConnectionError or a request lost to its
 * connection. Undefined for anything else (a refusal, a missing stream, a bug). The bus refusing
 * the credential is not transient (isAuthorizationRefusal). Pure.
 */
export function transientBusConditionOf(error: unknown): { kind: TransientBusKind; reason: string } | undefined {
  for (const e of causes(error)) {
    if (e instanceof errors.TimeoutError) return { kind: "timeout", reason: "a request to the bus timed out (the bus busy, or a cluster electing a leader)" };
    if (e instanceof errors.NoRespondersError || (e instanceof errors.RequestError && e.isNoResponders()) || (e instanceof Error && e.name === "JetStreamNotEnabled")) {
      return { kind: "no-responders", reason: "nothing answered a JetStream request (no responders: the bus reloading, or a stream without a leader yet)" };
    }
    if (e instanceof JetStreamApiError && (e.status === 503 || UNAVAILABLE_FOR_NOW.has(e.code))) {
      return { kind: "jetstream-unavailable", reason: `JetStream was unavailable for a moment (${e.code}: a reload, or a cluster electing a leader)` };
    }
    if (e instanceof errors.ClosedConnectionError || e instanceof errors.DrainingConnectionError || (e instanceof errors.RequestError && LOST_REQUEST_MESSAGES.has(e.message))) {
      return { kind: "connection-lost", reason: "the connection to the bus closed or dropped under the request (a server stopped, or the connection is reconnecting)" };
    }
  }
  return undefined;
}
