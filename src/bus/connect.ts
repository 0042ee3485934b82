import { connect as natsConnect, type Authenticator, type NatsConnection, type NodeConnectionOptions } from "@nats-io/transport-node";
import { z } from "zod";
import { inboxPrefix } from "../names.ts";
import { parseBusAddress } from "../projections/queries.ts";
import { caTlsOptions, normalizeFingerprint, pinnedCertificateOf, probeCertificate, type PresentedChain } from "./pin.ts";
import { nkeySigner, type NkeySigner } from "./nkeySigner.ts";
import { dialFailureOf, type BusConnectKind } from "./errors.ts";
import { TLS_REQUIRED, isDialableBusAddress } from "./tlsOnly.ts";

/**
 * Dialing the bus with a credential (DESIGN.md section 5a).
 *
 * - a principal proves itself with its nkey seed (R63): the bus sends a nonce, the client signs it
 *   with the seed, and the seed itself never leaves the machine; a password (the bootstrap of an
 *   older mesh, a credential file written before nkeys) is still accepted and travels as a connect
 *   option, beside the address, never inside a URL (R3);
 * - every client replies on its own inbox prefix `_INBOX_<user>` (R33);
 * - the address is `tls://`, pinned to the mesh certificate's SHA-256 fingerprint instead of
 *   verified by name (R34), on the first connect and on every reconnect; any other address is
 *   refused before a byte is sent (R67, tlsOnly.ts), the credential's shape included.
 */

const BusAddress = z
  .string()
  .regex(/^[a-z]+:\/\/[^/@\s]+$/, "tls://host:port, with no user or password inside")
  .refine(isDialableBusAddress, TLS_REQUIRED);

/** An nkey user seed as `nk` encodes it: `SU` and 56 base32 characters (R63). */
export const NKEY_SEED = /^SU[A-Z2-7]{56}$/;
/** An nkey user public key: `U` and 55 base32 characters, what the user list holds (R63). */
export const NKEY_USER = /^U[A-Z2-7]{55}$/;

/**
 * A credential file / record: `{ address, user, seed, fingerprint }` (section 5a, R63): `seed` is
 * the principal's nkey user seed; `user` is its name on the mesh (its inbox prefix, R33), not
 * something the bus checks. A credential written before nkeys carries `password` instead, still
 * dialled (the transition, and an old mesh's bootstrap); exactly one of the two. On a cluster
 * (issue 14, R62) `addresses` lists every server of the bus beside `address` (which stays, so a
 * file written before clusters reads the same and a reader that knows only `address` still dials
 * one server); every address presents the one pinned certificate.
 */
export const BusCredential = z
  .object({
    address: BusAddress,
    addresses: z.array(BusAddress).min(1, "at least one address, or leave the field out").optional(),
    user: z.string().min(1),
    seed: z.string().regex(NKEY_SEED, "an nkey user seed (SU...), as `mesh host init` or the controller made it").optional(),
    password: z.string().min(1).optional(),
    fingerprint: z
      .string()
      .regex(/^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){31}$/, "the SHA-256 fingerprint of the bus certificate, AA:BB:... (32 bytes)")
      .optional(),
  })
  .strict()
  .superRefine((value, ctx) => {
    if ((value.seed === undefined) === (value.password === undefined)) {
      ctx.addIssue({ code: "custom", path: ["seed"], message: "a credential holds exactly one of \"seed\" (an nkey seed) and \"password\"" });
    }
  });
export type BusCredential = z.infer<typeof BusCredential>;

/** True when `secret` is an nkey user seed rather than a password (R63). */
export function isSeed(secret: string): boolean {
  return NKEY_SEED.test(secret);
}

/** The credential's secret: its seed, or the password of a credential from before nkeys. */
export function secretOf(credential: BusCredential): string {
  return credential.seed ?? credential.password ?? "";
}

/**
 * `credential` with `secret` as its secret: in `seed` when it is an nkey seed, in `password`
 * otherwise (the other field dropped). Every place that turns an opened secret into a credential
 * goes through it, so a seed and a password are never confused.
 */
export function withSecret(credential: BusCredential, secret: string): BusCredential {
  const { seed: _seed, password: _password, ...rest } = credential;
  return isSeed(secret) ? { ...rest, seed: secret } : { ...rest, password: secret };
}

/** Caller settings of connectToBus. */
export type BusConnectOptions = {
  /** Connection name shown by the server's monitoring (`mesh-cli`, `mesh-controller`). */
  name?: string;
  /** Reconnect after a lost connection (default true; a one-shot CLI passes false). */
  reconnect?: boolean;
  /** Milliseconds to wait for the first connection (default 5,000). */
  timeoutMs?: number;
  /** Reconnect attempts before giving up; -1 for ever (default -1 when reconnecting). */
  maxReconnectAttempts?: number;
  /**
   * The current secret (an nkey seed, or a password from before nkeys), read at every
   * (re)connect instead of the credential's own (the controller or a host switching to a rotated
   * key, R14, R50). With it, an authorization error does not end reconnecting: the bus may not have
   * reloaded the list with the new key yet.
   */
  secret?: () => string;
  /**
   * Milliseconds between reconnect attempts to the server, jitter included (default: the client's,
   * 2,000 plus up to 1,000 over TLS). A CLI waiting for a reply across a user-list reload asks for
   * less, so that it is back on its inbox before the reply is published.
   */
  reconnectWaitMs?: number;
  /**
   * Called with the mesh CA's certificate as PEM once it matched the pin (tls:// only): a host
   * hands it to its modules as `certificate.pem`, which a standard client verifies against (R57, R71).
   */
  onCertificate?: (pem: string) => void;
  /**
   * Whether every request remembers where it was made, to add that place to the stack of its
   * error (the client's async traces; default true). Each request then captures an Error and its
   * stack before it is sent, about 50 µs of CPU, twice (the request and its timer). A timeout or a
   * refused request still rejects with the same error class, message and cause without it: only
   * the stack then ends in the client instead of the caller. The controller turns it off: it logs
   * an error's first line, never its stack, and makes JetStream requests on every command.
   */
  asyncTraces?: boolean;
};

/**
 * The one error of dialing the bus: one line naming the address (never a password, R3) and what
 * went wrong; `kind` says which (src/bus/errors.ts BusConnectKind: `unauthorized` when the bus
 * refused the credential, ...), classified from the client's error classes; `cause` holds the
 * underlying error.
 */
export class BusConnectError extends Error {
  override readonly name = "BusConnectError";
  readonly address: string;
  readonly kind: BusConnectKind;
  constructor(address: string, reason: string, options?: { cause?: unknown; kind?: BusConnectKind }) {
    super(`cannot connect to the bus at ${address}: ${reason}`, options?.cause === undefined ? undefined : { cause: options.cause });
    this.address = address;
    this.kind = options?.kind ?? "setup";
  }
}

/** A BusConnectError for a dial that failed with `error`, its kind and reason from dialFailureOf. */
function dialError(address: string, error: unknown): BusConnectError {
  const { kind, reason } = dialFailureOf(error);
  return new BusConnectError(address, reason, { cause: error, kind });
}

/**
 * No certificate the bus presented has the pinned fingerprint (R34, R71: the mesh CA's). Names
 * the address, the pin and the bus's own certificate's fingerprint; the connection was refused
 * before any credential was sent.
 */
export class CertificateMismatch extends BusConnectError {
  readonly expected: string;
  readonly presented: string;
  constructor(address: string, expected: string, presented: string) {
    super(
      address,
      `the server presented certificate ${presented} but the credential pins ${expected}: check MESH_BROKER_CERTIFICATE / the credential's fingerprint`,
      { kind: "certificate" },
    );
    this.expected = expected;
    this.presented = presented;
  }
}

/**
 * Every address a credential names, `address` first, then `addresses` in order, each once.
 * Pure; the one reading of the two fields (R62).
 */
export function credentialAddresses(credential: Pick<BusCredential, "address" | "addresses">): string[] {
  return [...new Set([credential.address, ...(credential.addresses ?? [])])];
}

/**
 * The CA certificates a probe found under their pin in this process, by pin (R34, R71). A later
 * dial with the same pin trusts that CA without probing again: one TLS handshake a dial instead of
 * two (a probe doubled the client's and the bus's CPU for a dial). Safe to keep: a certificate is
 * kept only under its own fingerprint, and every (re)connect verifies the bus against it.
 */
const pinnedCertificates = new Map<string, { pem: string; own: boolean }>();

/**
 * Connects to the bus with `credential` and returns the connection.
 *
 * A credential naming several servers (`addresses`, a cluster, R62) is dialled on all of them:
 * the client connects to one and, when it is lost, reconnects to any survivor. All must share one
 * scheme; over TLS the first server that answers is probed and must present the pinned CA.
 *
 * `tls://host:port`: probes the server first (plain INFO, then a TLS handshake that only reads the
 * chain), refuses with CertificateMismatch unless a certificate of the chain has the SHA-256
 * fingerprint `credential.fingerprint` (the mesh CA's, R34, R71), then connects trusting that
 * certificate alone, with ordinary TLS verification (chain and host name) on every (re)connect.
 * The probe is made once per pin in a process (pinnedCertificates); a dial that fails on a known
 * CA for a reason other than the credential, the address or time probes again. A `tls://` credential without a
 * fingerprint is refused. Any other address (`nats://`) is refused before a socket is opened
 * (R67: a CONNECT in clear could be relayed by anyone on the way), unless this is a test process
 * that allowed plain dials (tlsOnly.ts, the test harness's one seam).
 *
 * Throws BusConnectError (one line, the address alone, R3) when the bus cannot be reached, the
 * credential is refused, or the address is malformed or not TLS (kind `setup`).
 */
export async function connectToBus(credential: BusCredential, options: BusConnectOptions = {}): Promise<NatsConnection> {
  const { address, all } = dialAddresses(credential);
  const timeoutMs = options.timeoutMs ?? 5_000;
  const settings = dialSettings(credential, all, timeoutMs, options);
  if (all[0]!.scheme === "tls") {
    if (credential.fingerprint === undefined) {
      throw new BusConnectError(address, "the credential has no certificate fingerprint to pin (R34): add \"fingerprint\" to it");
    }
    const pin = normalizeFingerprint(credential.fingerprint);
    const dialled = await dialKnownPin(settings, address, pin, options);
    if (dialled !== undefined) return dialled;
    const trusted = await probePin(address, all, pin, timeoutMs);
    settings.tls = caTlsOptions(trusted.pem, trusted.own ? pin : undefined);
    options.onCertificate?.(trusted.pem);
  } else {
    // Only a test process that allowed plain dials gets here (tlsOnly.ts): its nats:// test servers.
    settings.tls = null;
  }
  try {
    return await natsConnect(settings);
  } catch (error) {
    throw dialError(address, error);
  }
}

/** One server of a credential, parsed. */
type DialAddress = { scheme: string; host: string; port: number };

/**
 * The credential's addresses parsed (`address`: all of them, for lines), each checked before a
 * socket is opened: well formed, TLS (R67, unless a test allowed plain dials), all one scheme.
 * Throws BusConnectError naming the address at fault.
 */
function dialAddresses(credential: BusCredential): { address: string; all: DialAddress[] } {
  const addresses = credentialAddresses(credential);
  const address = addresses.join(",");
  const all: DialAddress[] = [];
  for (const one of addresses) {
    try {
      all.push(parseBusAddress(one));
    } catch (error) {
      throw new BusConnectError(one, "the address is not tls://host:port", { cause: error });
    }
  }
  const plain = addresses.find((one) => !isDialableBusAddress(one));
  if (plain !== undefined) throw new BusConnectError(plain, TLS_REQUIRED);
  const parts = all[0]!;
  const mixed = all.find((p) => p.scheme !== parts.scheme);
  if (mixed) throw new BusConnectError(address, `the addresses mix ${parts.scheme}:// and ${mixed.scheme}://: every server of one bus is dialled the same way`);
  return { address, all };
}

/** nats.js's settings for a dial of `all` (its `tls` set by the caller): the credential's authenticator and inbox prefix (R33), BusConnectOptions. */
function dialSettings(credential: BusCredential, all: readonly DialAddress[], timeoutMs: number, options: BusConnectOptions): NodeConnectionOptions {
  const reconnect = options.reconnect ?? true;
  const secret = options.secret ?? (() => secretOf(credential));
  const settings: NodeConnectionOptions = {
    servers: all.map((p) => `${p.host}:${p.port}`),
    authenticator: authenticatorFor(credential.user, secret),
    inboxPrefix: inboxPrefix(credential.user),
    name: options.name ?? "mesh",
    timeout: timeoutMs,
    reconnect,
    maxReconnectAttempts: reconnect ? (options.maxReconnectAttempts ?? -1) : 0,
    // Pinned to the addresses of the credential: gossiped cluster URLs would be dialled by name;
    // the credential lists every server of the mesh (R62), each presenting the one pinned certificate.
    ignoreClusterUpdates: true,
    noAsyncTraces: options.asyncTraces === false,
    ...(options.reconnectWaitMs === undefined ? {} : { reconnectTimeWait: options.reconnectWaitMs, reconnectJitter: 0, reconnectJitterTLS: 0 }),
  };
  if (options.secret) settings.ignoreAuthErrorAbort = true;
  return settings;
}

/**
 * A dial trusting the certificate this process already pinned for `pin` (pinnedCertificates), or
 * undefined when none is known or the dial failed in a way a new probe may explain (the pin then
 * forgotten). Throws BusConnectError for a failure of the credential, the address or time.
 */
async function dialKnownPin(settings: NodeConnectionOptions, address: string, pin: string, options: BusConnectOptions): Promise<NatsConnection | undefined> {
  const known = pinnedCertificates.get(pin);
  if (known === undefined) return undefined;
  settings.tls = caTlsOptions(known.pem, known.own ? pin : undefined);
  options.onCertificate?.(known.pem);
  try {
    return await natsConnect(settings);
  } catch (error) {
    const failure = dialError(address, error);
    // The bus may present another certificate now: probed again by the caller, which names it (CertificateMismatch).
    if (failure.kind !== "other" && failure.kind !== "certificate") throw failure;
    pinnedCertificates.delete(pin);
    return undefined;
  }
}

/**
 * The certificate to trust for `pin`, probed on the first server that answers (a cluster with one
 * server down still dials) and kept in pinnedCertificates. Throws CertificateMismatch when no
 * certificate of the chain has the pin, BusConnectError when no server answers.
 */
async function probePin(address: string, all: readonly DialAddress[], pin: string, timeoutMs: number): Promise<{ pem: string; own: boolean }> {
  let presented: PresentedChain | undefined;
  let lastError: unknown;
  for (const p of all) {
    try {
      presented = await probeCertificate(p.host, p.port, { timeoutMs });
      break;
    } catch (error) {
      lastError = error;
    }
  }
  if (presented === undefined) throw dialError(address, lastError);
  const trusted = pinnedCertificateOf(presented, pin);
  if (trusted === undefined) throw new CertificateMismatch(address, pin, presented.fingerprint);
  // The pin is the bus's own certificate when it presents no CA behind it: a mesh made before R71.
  const own = presented.chain.length === 1;
  pinnedCertificates.set(pin, { pem: trusted.pem, own });
  return { pem: trusted.pem, own };
}

/**
 * The client's answer to the bus's nonce at every (re)connect, reading `secret()` each time (so a
 * rotated seed is used without a restart): an nkey seed signs the nonce (the seed never travels,
 * R63), natively (nkeySigner: nats.js's nkeyAuthenticator signs in JavaScript, ~35x slower, too
 * slow for a fleet's reconnect storm), the opened seed kept until the secret changes; a password
 * is sent as `user`/`pass`.
 */
function authenticatorFor(user: string, secret: () => string): Authenticator {
  let opened: { seed: string; signer: NkeySigner } | undefined;
  return (nonce?: string) => {
    const current = secret();
    if (!isSeed(current)) return { user, pass: current };
    if (opened?.seed !== current) opened = { seed: current, signer: nkeySigner(current) };
    return { nkey: opened.signer.publicKey, sig: nonce ? opened.signer.sign(nonce) : "" };
  };
}
