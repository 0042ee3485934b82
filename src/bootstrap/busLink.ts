/**
 * The controller's link to the bus, steps 2 and 2a of its start (main.ts): the dial (a pending
 * rotated seed tried when the file's is refused, R14), the watch of the connection's status, the
 * redial when JetStream stops answering, and the wait until JetStream answers at all.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { BusConnectError, connectToBus, type BusConnectOptions } from "../bus/connect.ts";
import type { ControllerConfig } from "../config.ts";
import { CATALOGUE_STREAM, CONTROLLER_NAME } from "../names.ts";
import { BUS_READY_DELAYS_MS, retryJetStream } from "../bus/retry.ts";
import { isStreamNotFound } from "../bus/errors.ts";
import { pendingPassword, type ControllerCredential } from "../controller/credential.ts";
import type { ControllerLog } from "./log.ts";
import { busStatusLine } from "./busStatus.ts";
import type { ControllerMetrics } from "../metrics/controller.ts";

/**
 * Milliseconds between the controller's reconnect attempts to one server (nats.js's default: 2,000
 * plus up to 1,000 over TLS, counted from the last connect). The push that installs the
 * controller's rotated key (R14) drops its connection with the reload; with the default, a
 * controller that connected a second or two before (every first `mesh up`) was back up to 3 s
 * later, and the push with it. One or two controllers dial: no storm to spread.
 */
export const CONTROLLER_RECONNECT_WAIT_MS = 250;

/**
 * The controller's own settings of every dial (connectToBus), beside its credential, its secret
 * and its first connect's timeout: its name on the bus, no async traces (a command's fenced
 * append is a JetStream request, and the controller's log never shows a stack), and its reconnect
 * wait (CONTROLLER_RECONNECT_WAIT_MS). The command bench's controller dials with these too
 * (test/support/commandMesh.ts), so it measures what ships.
 */
export const CONTROLLER_DIAL: Readonly<BusConnectOptions> = { name: CONTROLLER_NAME, asyncTraces: false, reconnectWaitMs: CONTROLLER_RECONNECT_WAIT_MS };

/** The bus refused the dialled seed (BusConnectError of kind `unauthorized`): a pending rotated one may be the right one. */
function isAuthorizationRefusal(error: unknown): boolean {
  return error instanceof BusConnectError && error.kind === "unauthorized";
}

/** Step 2: dial with the file's seed, else with a pending rotated one (then kept, R14). */
export async function connect(config: ControllerConfig, credential: ControllerCredential, log: ControllerLog, timeoutMs: number): Promise<NatsConnection> {
  const address = credential.current().address;
  const dial = () => connectToBus(credential.current(), { ...CONTROLLER_DIAL, timeoutMs, secret: credential.dialPassword });
  try {
    const nc = await dial();
    // The server dialled, not the first configured: on a cluster that one may be down (R62).
    log.info(`connected to the bus at ${nc.getServer()} as ${credential.current().user}`);
    return nc;
  } catch (error) {
    const pending = pendingPassword(config.credentialFile, credential.current().user);
    if (!isAuthorizationRefusal(error) || pending === null) throw error;
    log.info(`the bus at ${address} refused the credential file's key; trying the rotated one pending beside it (R14)`);
    credential.stage(pending);
    const nc = await dial();
    credential.commit();
    log.info(`connected to the bus at ${nc.getServer()} as ${credential.current().user} with the rotated key; the credential file is updated`);
    return nc;
  }
}

/**
 * Seen on a 2.9.10 cluster (issue 14): after the reload of a user list that changed the
 * controller's own key, the reconnected connection could get no JetStream answer for a
 * minute while core messages flowed (its lease then lapsed, R61); a fresh connection answers at
 * once. So after each reconnect JetStream is asked (account info, 1.5 s each); no answer, twice:
 * dial again, well within a lease. Never throws.
 */
async function checkJetStreamAfterReconnect(nc: NatsConnection, log: ControllerLog): Promise<void> {
  for (let attempt = 1; attempt <= 2; attempt += 1) {
    try {
      await (await jetstreamManager(nc, { checkAPI: false, timeout: 1_500 })).getAccountInfo();
      return;
    } catch {
      if (nc.isClosed()) return;
    }
  }
  log.error("JetStream did not answer on the reconnected connection: dialling the bus again");
  await nc.reconnect().catch(() => undefined);
}

/** What the connection's status watch calls, set as the start goes on (the records open, serving). */
export type Hooks = { onReconnect: () => void; onLeaseLost: () => void };

/** Step 2: each status of the connection logged (the server it concerns, R62); a reconnect rechecks JetStream and `hooks`. */
export function watchBusStatus(nc: NatsConnection, log: ControllerLog, hooks: Hooks, metrics: ControllerMetrics | undefined): void {
  void (async () => {
    for await (const status of nc.status()) {
      // The server named is the one the event concerns (a survivor after a reconnect, R62).
      const line = busStatusLine(status, nc.getServer());
      if (line) log[line.level](line.text);
      if (status.type === "reconnect") {
        void checkJetStreamAfterReconnect(nc, log);
        hooks.onReconnect();
        metrics?.reconnected();
      }
    }
  })();
}

/** Dials the bus again (once at a time) when JetStream stopped answering on a connection that is up. */
export function redialer(nc: NatsConnection, log: ControllerLog): (why: string) => void {
  let redialling = false;
  return (why) => {
    if (redialling || nc.isClosed()) return;
    redialling = true;
    log.error(`${why}: dialling the bus again`);
    void nc.reconnect().catch(() => undefined).finally(() => { redialling = false; });
  };
}

/** Step 2a: waits (BUS_READY_DELAYS_MS) until JetStream answers for the records' stream, there or not. */
export async function waitForJetStream(nc: NatsConnection, log: ControllerLog): Promise<void> {
  await retryJetStream("asking JetStream for the records' stream", () => jetstreamManager(nc, { checkAPI: false })
    .then((jsm) => jsm.streams.info(CATALOGUE_STREAM))
    .catch((error: unknown) => (isStreamNotFound(error) ? null : Promise.reject(error))), {
    delaysMs: BUS_READY_DELAYS_MS,
    onRetry: (attempt) => { if (attempt === 1) log.info("waiting for JetStream on the bus to answer (a cluster elects its leaders after a start)"); },
  });
}
