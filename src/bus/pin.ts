import { connect as netConnect, isIP } from "node:net";
import { checkServerIdentity as checkNames, connect as tlsConnect, createSecureContext, type DetailedPeerCertificate, type PeerCertificate, type TLSSocket } from "node:tls";
import { X509Certificate } from "node:crypto";
import type { NodeConnectionOptions } from "@nats-io/transport-node";
import { TLS_REQUIRED } from "./tlsOnly.ts";

type NodeTlsOptions = NonNullable<NodeConnectionOptions["tls"]>;

/**
 * How a mesh client trusts the bus (R34, R71). The bus presents a certificate issued by the mesh's
 * CA, followed by the CA's own; a credential pins the CA's SHA-256 fingerprint. The client reads
 * the chain once (probeCertificate), takes the certificate whose fingerprint is the pin as its one
 * CA, and then dials with ordinary TLS verification against it: chain and name, at every
 * (re)connect. So the bus's certificate can be reissued (new names, new key) without any client
 * changing its pin. connectToBus keeps the CA a pin found, so a process probes once per pin.
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
): Promise<PresentedChain> {
  return new Promise((resolve, reject) => {
    const socket = netConnect({ host, port });
    let secure: TLSSocket | undefined;
    let settled = false;
    const finish = (error: Error | null, value?: PresentedChain) => {
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
        const chain = chainOf(certificate);
        finish(null, { ...chain[0]!, chain });
      });
    };
    socket.on("data", onData);
  });
}

/** One certificate the bus presented: its SHA-256 fingerprint (`AA:BB:...`) and PEM. */
export type PresentedCertificate = { fingerprint: string; pem: string };
/** The bus's own certificate (fingerprint, pem) and the whole chain it presented, its own first. */
export type PresentedChain = PresentedCertificate & { chain: PresentedCertificate[] };

/** The certificates of a peer's chain, its own first, each once (a self-signed root is its own issuer). */
function chainOf(first: DetailedPeerCertificate): PresentedCertificate[] {
  const chain: PresentedCertificate[] = [];
  for (let at: DetailedPeerCertificate | undefined = first; at?.raw && !chain.some((c) => c.fingerprint === at!.fingerprint256); at = at.issuerCertificate) {
    chain.push({ fingerprint: at.fingerprint256, pem: new X509Certificate(at.raw).toString() });
  }
  return chain;
}

/**
 * The certificate of `presented` whose fingerprint is `pin` (the mesh's CA, R71; a bus of a mesh
 * made before R71 presents a self-signed certificate, its own CA), or undefined when none is.
 */
export function pinnedCertificateOf(presented: PresentedChain, pin: string): PresentedCertificate | undefined {
  const expected = normalizeFingerprint(pin);
  return presented.chain.find((certificate) => certificate.fingerprint === expected);
}

/**
 * TLS options for nats.js that verify the bus the ordinary way against `caPem` alone (R71): the
 * chain must lead to it and the certificate must name the host dialled; Node's own identity check.
 * With `ownPin` (the pin is the bus's own, self-signed certificate: a mesh made before R71) the
 * identity check compares that fingerprint instead of names, as R34 did, so such a mesh's clients
 * keep dialling the addresses it told them until it moves over to a CA. When it has moved (its
 * first push makes that certificate the CA, renewBusCertificate), the bus presents one issued by
 * it, which the chain check already traced to the pin: its names are checked the ordinary way, so
 * a connection made before the move reconnects after it.
 * nats.js hands these to Node's `tls.connect` unchanged, at the first connect and at every
 * reconnect: the CA is given as one secure context made here, not as `ca` (from which tls.connect
 * parses the PEM and builds a new context at each dial: a fifth of a client's time in a reconnect
 * storm, measured with `npm run bench -- fleet`). Throws Node's error when `caPem` is no certificate.
 */
export function caTlsOptions(caPem: string, ownPin?: string): NodeTlsOptions {
  const options = { secureContext: createSecureContext({ ca: caPem }), rejectUnauthorized: true };
  if (ownPin === undefined) return options as NodeTlsOptions;
  const expected = normalizeFingerprint(ownPin);
  const checkServerIdentity = (host: string, certificate: PeerCertificate): Error | undefined =>
    certificate.fingerprint256 === expected ? undefined : checkNames(host, certificate);
  return { ...options, checkServerIdentity } as NodeTlsOptions;
}
