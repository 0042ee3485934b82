import { connect, errors, type NatsConnection, type NodeConnectionOptions } from "@nats-io/transport-node";
import { causes } from "./errors.ts";

/** Tries of a dial that the bus closed in its handshake, and the pause between them, ms. */
export const ADMIT_TRIES = 4;
export const ADMIT_PAUSE_MS = 250;

/**
 * True for what a dial meets when the bus closed it in its handshake: nats-server 2.9.10,
 * reloading its users, closes every client whose CONNECT it has not read yet (server/reload.go,
 * reloadAuthorization) with an authorization violation, which the client reads, or before the
 * client has written its CONNECT (EPIPE) or read the answer (ECONNRESET).
 */
function closedInHandshake(error: unknown): boolean {
  for (const e of causes(error)) {
    if (e instanceof errors.AuthorizationError) return true;
    const code = (e as { code?: unknown }).code;
    if (code === "EPIPE" || code === "ECONNRESET") return true;
  }
  return false;
}

/**
 * nats.js's connect, tried again when the bus closed it in its handshake (closedInHandshake), up
 * to `tries` times (default ADMIT_TRIES): a dial beside any push (a reload of the users) was
 * refused now and then with a valid key. A key the bus really refuses is still refused after the
 * last try (ADMIT_PAUSE_MS x 3 later), and that error is thrown; so is any other failure, at once
 * (an address where nothing listens, a timeout). `onRetry` is told each try made again (1-based).
 */
export async function connectAdmitted(
  options: NodeConnectionOptions,
  { tries = ADMIT_TRIES, onRetry = () => undefined }: { tries?: number; onRetry?: (attempt: number) => void } = {},
): Promise<NatsConnection> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await connect(options);
    } catch (error) {
      if (attempt >= tries || !closedInHandshake(error)) throw error;
      onRetry(attempt);
      await new Promise((done) => setTimeout(done, ADMIT_PAUSE_MS));
    }
  }
}
