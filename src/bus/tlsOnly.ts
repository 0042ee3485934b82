/**
 * R67: every client of the mesh dials TLS and verifies the bus (R34) on every dial. This module is
 * the one place that says which bus addresses a mesh client may dial: `tls://`, and in the product
 * nothing else. The credential shape (BusCredential: every credential file, a host's credential,
 * an enrol or rotate reply), the controller's configuration and connectToBus itself all ask it, so
 * no path of the product can send a CONNECT in clear.
 */

/** Set only by allowPlainBusDialsInThisTestProcess, in a test process. */
let plainAllowed = false;

/** What every refusal of a non-TLS address says (R67); no message of the mesh suggests `nats://`. */
export const TLS_REQUIRED = "the bus must offer TLS (R67): a mesh client dials only tls://host:port, verified against the bus's certificate; configure tls on the bus (`mesh up` and the installer do)";

/**
 * TEST HARNESS ONLY: lets this process dial `nats://` test servers, without TLS, so that bus tests
 * about something else than TLS run on a plain nats-server. test/support/natsServer.ts calls it
 * when it is loaded; no file under src/ calls it (test/unit/bus/tlsOnly.test.ts holds that).
 */
export function allowPlainBusDialsInThisTestProcess(): void {
  plainAllowed = true;
}

/** Whether a mesh client may dial `address` (R67): a `tls://` one; a `nats://` one only in a test process that allowed it. */
export function isDialableBusAddress(address: string): boolean {
  return address.startsWith("tls://") || (plainAllowed && address.startsWith("nats://"));
}
