import { connect as netConnect, isIP } from "node:net";
import { connect as tlsConnect, createSecureContext, type PeerCertificate, type TLSSocket } from "node:tls";
import { X509Certificate } from "node:crypto";
import type { NodeConnectionOptions } from "@nats-io/transport-node";
import { TLS_REQUIRED } from "./tlsOnly.ts";

type NodeTlsOptions = NonNullable<NodeConnectionOptions["tls"]>;

/**
 * Certificate pinning for the bus (R34). The mesh's bus presents its own, self-signed certificate
 * with no names on it; clients trust it by its SHA-256 fingerprint, not by a CA or a host name.
 *
 * Node calls `checkServerIdentity` only after the chain verified, which a self-signed certificate
 * fails; so the client first reads the certificate (probeCertificate), compares its fingerprint
 * with the pin, and then connects trusting exactly that certificate as its only CA, with an
 * identity check that compares the fingerprint again on every (re)connect. connectToBus keeps a
 * certificate that matched its pin, so a process probes once per pin, not once per dial.
 */

/** `aa:bb:...` or `AA:BB:...` → `AA:BB:...`, the form Node's `fingerprint256` uses. */
export function normalizeFingerprint(fingerprint: string): string {
  return fingerprint.trim().toUpperCase();
}

/**
 * Reads the certificate a nats-server at `host:port` presents: connects in the clear, reads the
 * server's INFO line, starts TLS without verifying anything, takes the peer certificate and closes
 * the TLS session cleanly before sending a CONNECT (no credential leaves the client; the bus logs
 * no handshake error). Returns its SHA-256 fingerprint
 * (`AA:BB:...`) and PEM. Throws an Error (one line) when the server is unreachable, does not speak
 * NATS, does not offer TLS, or `timeoutMs` (milliseconds) pass.
 */
export function probeCertificate(
  host: string,
  port: number,
  { timeoutMs = 5_000 }: { timeoutMs?: number } = {},
): Promise<{ fingerprint: string; pem: string }> {
  return new Promise((resolve, reject) => {
    const socket = netConnect({ host, port });
    let secure: TLSSocket | undefined;
    let settled = false;
    const finish = (error: Error | null, value?: { fingerprint: string; pem: string }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (error === null && secure) {
        // Ended, not destroyed: destroying the socket at secureConnect dropped the client's TLS
        // Finished before it was written, and the bus logged `TLS handshake error: EOF` for every
        // dial. end() writes it and a close_notify, so the bus sees a finished handshake and a
        // client that left; the socket is destroyed should the bus never close its side.
        secure.end();
        setTimeout(() => secure!.destroy(), timeoutMs).unref();
      } else {
        secure?.destroy();
        socket.destroy();
      }
      if (error) reject(error);
      else resolve(value!);
    };
    const timer = setTimeout(() => finish(new Error(`no TLS handshake within ${timeoutMs} ms`)), timeoutMs);
    socket.on("error", (error: NodeJS.ErrnoException) => {
      finish(error.code === "ECONNREFUSED" ? Object.assign(new Error("connection refused"), { code: error.code }) : error);
    });
    let buffered = "";
    const onData = (chunk: Buffer) => {
      buffered += chunk.toString("latin1");
      const end = buffered.indexOf("\r\n");
      if (end < 0) {
        if (buffered.length > 64 * 1024) finish(new Error("the server sent no INFO line: is this a NATS server?"));
        return;
      }
      socket.off("data", onData);
      const line = buffered.slice(0, end);
      if (!line.startsWith("INFO ")) return finish(new Error("the server sent no INFO line: is this a NATS server?"));
      let info: { tls_required?: boolean; tls_available?: boolean };
      try {
        info = JSON.parse(line.slice(5)) as typeof info;
      } catch {
        return finish(new Error("the server's INFO line is not JSON: is this a NATS server?"));
      }
      if (!info.tls_required && !info.tls_available) return finish(new Error(`the server does not offer TLS, and ${TLS_REQUIRED}`));
      // Certificate only: nothing is trusted or sent over this socket.
      secure = tlsConnect({ socket, rejectUnauthorized: false, ...(isIP(host) ? {} : { servername: host }) });
      secure.on("error", (error) => finish(error));
      secure.once("secureConnect", () => {
        const certificate = secure!.getPeerCertificate(true);
        if (!certificate || !certificate.raw) return finish(new Error("the server presented no certificate"));
        finish(null, { fingerprint: certificate.fingerprint256, pem: new X509Certificate(certificate.raw).toString() });
      });
    };
    socket.on("data", onData);
  });
}

/**
 * TLS options for nats.js that accept exactly the pinned certificate: it is the only CA, and the
 * identity check compares the presented certificate's fingerprint with `pin` instead of names.
 * nats.js hands these to Node's `tls.connect` unchanged, at the first connect and at every
 * reconnect: the CA is given as one secure context made here, not as `ca` (from which tls.connect
 * parses the PEM and builds a new context at each dial: a fifth of a client's time in a reconnect
 * storm, measured with `npm run bench -- fleet`). Throws Node's error when `pem` is no certificate.
 */
export function pinnedTlsOptions(pem: string, pin: string): NodeTlsOptions {
  const expected = normalizeFingerprint(pin);
  const checkServerIdentity = (_host: string, certificate: PeerCertificate): Error | undefined =>
    certificate.fingerprint256 === expected
      ? undefined
      : new Error(`the bus presented certificate ${certificate.fingerprint256}, not the pinned ${expected}`);
  return { secureContext: createSecureContext({ ca: pem }), rejectUnauthorized: true, checkServerIdentity } as NodeTlsOptions;
}
