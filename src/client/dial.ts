import { existsSync } from "node:fs";
import type { NatsConnection } from "@nats-io/transport-node";
import { BusConnectError, connectToBus, secretOf, type BusConnectOptions, type BusCredential } from "../bus/connect.ts";
import { dialAdmitted } from "../bus/admitted.ts";
import { pendingCredentialFile } from "../controller/credential.ts";
import { readBusCredential, renameDurable } from "../files/index.ts";

/** Dialling the bus as a credential file's holder, a rotated key pending beside it (R50): every verb and `mesh up`. */

/** Reconnect attempts of a CLI connection while a rotated seed is pending (see connectWithCredentialFile). */
export const PENDING_RECONNECTS = 100;
/** Milliseconds between those attempts: short, to be back on the inbox before the reply is sent. */
export const PENDING_RECONNECT_WAIT_MS = 20;

/**
 * Dials the bus with the credential file `file` (R50). While a rotated seed of the same user is
 * pending beside it (`<file>.next`, kept by `mesh credential rotate operator <me>`), the bus may
 * swap lists under this very command (the push that installs the new key drops this
 * connection): the connection then reconnects (up to PENDING_RECONNECTS times), with the file's
 * and the pending seed in turn, so the command's reply still arrives. When the bus refuses the
 * file's seed (Authorization Violation) at the first dial, the pending one is dialled, and once
 * it is admitted it replaces the file (rename, durably: R54); so does a reconnect the bus admits
 * with the pending seed (switchWhenReadmitted: the push that installed it, run from here), so the
 * verb after that push dials the live key first and is not refused. With no pending seed, a dial
 * the bus closed in its handshake is made again (dialAdmitted); with one, the refusal switches keys
 * instead. Throws what connectToBus throws (one line, the address alone, R3), or what `load`
 * throws for an unreadable file (readBusCredential: CredentialFileError).
 */
export async function connectWithCredentialFile(
  file: string,
  options: BusConnectOptions,
  load: (file: string) => BusCredential = readBusCredential,
): Promise<NatsConnection> {
  const credential = load(file);
  const pendingFile = pendingCredentialFile(file);
  let pending: BusCredential | null = null;
  if (existsSync(pendingFile)) {
    try {
      const read = load(pendingFile);
      if (read.user === credential.user) pending = read;
    } catch {
      // an unreadable pending file is ignored: the file's seed alone is dialled
    }
  }
  if (pending === null) return dialAdmitted(() => connectToBus(credential, options));
  let turn = 0;
  /** Which secret the last (re)connect presented: 0 the file's, 1 the pending one. */
  let presented = 0;
  const passwords = [secretOf(credential), secretOf(pending)];
  const dialOptions: BusConnectOptions = {
    ...options, reconnect: true, maxReconnectAttempts: PENDING_RECONNECTS, reconnectWaitMs: PENDING_RECONNECT_WAIT_MS,
    secret: () => {
      presented = turn++ % passwords.length;
      return passwords[presented]!;
    },
  };
  try {
    const nc = await connectToBus(credential, dialOptions);
    void switchWhenReadmitted(nc, () => presented === 1, pendingFile, file);
    return nc;
  } catch (error) {
    if (!(error instanceof BusConnectError) || error.kind !== "unauthorized") throw error;
    const nc = await connectToBus(pending, options);
    renameDurable(pendingFile, file);
    return nc;
  }
}

/**
 * R50: once the bus readmits `nc` with the pending seed (`byPending()` at a reconnect: the push
 * that installed the new key dropped the connection, and the old seed is no longer on the list),
 * the pending file replaces the credential file at once, so the next verb dials the live key first
 * instead of being refused the old one (which the bus logs as an authorization error). Nothing is
 * moved when the connection never reconnects, or is readmitted with the file's seed.
 */
async function switchWhenReadmitted(nc: NatsConnection, byPending: () => boolean, pendingFile: string, file: string): Promise<void> {
  for await (const status of nc.status()) {
    if (status.type !== "reconnect" || !byPending()) continue;
    try {
      renameDurable(pendingFile, file);
    } catch {
      // another verb moved it first: the file holds the new seed either way
    }
    return;
  }
}
