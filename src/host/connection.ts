import type { BusConnectOptions } from "../bus/connect.ts";
import { isAuthorizationRefusal, isConsumerNotFound, isStreamNotFound } from "../bus/errors.ts";
import { CONTROL_STREAM, declarationConsumer } from "../names.ts";
import { firstLine } from "./plan.ts";

/**
 * How a host agent dials the bus and what it says when an attempt fails (DESIGN.md section 7):
 * its dial options, and the words of a refusal (R1, R50, R64) or another failure.
 */

/**
 * What to do about a refused credential. Before it was ever admitted: it is not on the list yet
 * (a push composes it, R1). Once admitted: the node was removed (`mesh node remove`: stop this
 * agent) or its key rotated: the agent presents its pending seed by itself (R50), and when the
 * mesh recorded a key this host does not hold, a new pair is made here and recorded (`mesh host
 * rotate-key`, then `mesh credential rotate node <node> --nkey`, R64).
 */
export function refusedAdvice(node: string, stateDir: string, everAdmitted: boolean): string {
  const rotated = `if its key was rotated, this agent presents its pending seed by itself; if the mesh recorded a key this host does not hold, make one here (\`mesh host rotate-key --state ${stateDir}\`), record it (\`mesh credential rotate node ${node} --nkey <the key it prints>\`) and push`;
  return everAdmitted
    ? `the bus refuses node ${node}'s credential: if the node was removed (\`mesh node remove ${node}\`), stop this agent; ${rotated}`
    : `the bus refuses node ${node}'s credential: it is not on the bus's user list (a push composes it, R1; the genesis node is carried by \`mesh genesis --node\`, R56); if the node was removed, stop this agent; ${rotated}`;
}

/**
 * Refused reconnects of a live connection before the agent closes it and backs off: two, so that
 * during a rotation both the current seed and the pending one are presented (R50) before a wait.
 */
export const RECONNECT_REFUSALS_BEFORE_BACKOFF = 2;

/**
 * Milliseconds a host agent gives one dial (TCP, TLS handshake, CONNECT answered), the first and
 * every reconnect: as long as the bus gives a TLS handshake (installer/serverConfig.ts
 * CLIENT_TLS_TIMEOUT_SECONDS, 30 s), so that in a reconnect storm a handshake the bus is still
 * working through is not given up and tried again (with 5 s a fleet of 2,000 never came back on a
 * loaded machine). What it costs: a dial to an address that does not answer at all waits this long
 * before the next attempt.
 */
export const HOST_DIAL_TIMEOUT_MS = 30_000;

/**
 * How a host agent dials the bus (connectToBus): named `mesh-host-<node>`, each dial bounded by
 * `connectTimeoutMs` (HOST_DIAL_TIMEOUT_MS), and `secret` read at every (re)connect, so an
 * authorization error never ends reconnecting (a rotation, R50; a list not yet reloaded). One
 * place: the fleet bench dials its mesh side with it.
 */
export function hostDialOptions(node: string, secret: () => string, connectTimeoutMs = HOST_DIAL_TIMEOUT_MS): BusConnectOptions {
  return { name: `mesh-host-${node}`, timeoutMs: connectTimeoutMs, secret };
}

/** Why an attempt failed, for the log line: the reason, and what it probably means. */
export function explainFailure(error: unknown, node: string): string {
  const message = firstLine(error);
  if (isAuthorizationRefusal(error)) {
    return `${message}; its credential is probably not in the bus's user list yet (a push composes it, R1)`;
  }
  if (isConsumerNotFound(error)) {
    return `consumer ${declarationConsumer(node)} on ${CONTROL_STREAM} does not exist yet (the controller raises it at start and on push)`;
  }
  if (isStreamNotFound(error)) return `stream ${CONTROL_STREAM} does not exist yet (the controller raises it at start)`;
  return message;
}
