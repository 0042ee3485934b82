import "./reflectShim.ts";
import * as x509 from "@peculiar/x509";
import { X509Certificate as NodeCertificate, createPrivateKey, randomBytes, webcrypto } from "node:crypto";
import { certificateNames, isAddressName } from "../projections/busNames.ts";
import { certificatesOf } from "./secrets.ts";

export { certificatesOf };

/**
 * The mesh's certificate authority (R71), with @peculiar/x509 over Node's WebCrypto: genesis makes
 * the CA (an EC P-256 key and a self-signed CA certificate); the bus's certificate is issued by it
 * for a set of names (busCertificateNames) and reissued whenever that set changes. Clients verify
 * the bus against the CA certificate by ordinary TLS verification, names included.
 */

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
const subtle = webcrypto.subtle;
type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;

const ALGORITHM = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;
const DAY_MS = 24 * 60 * 60 * 1000;
/** The CA outlives any bus certificate it issues. */
const CA_DAYS = 20 * 365;
/** A bus certificate lasts ten years: it is reissued when its names change, not on a schedule. */
const LEAF_DAYS = 10 * 365;
/** Issued certificates start an hour back: a client whose clock is a little behind still accepts them. */
const CLOCK_SKEW_MS = 60 * 60 * 1000;

/** A certificate and its private key, both PEM (the key PKCS#8). */
export type KeyedCertificate = { certificate: string; key: string };

/** A fresh positive 128-bit serial number, hex. */
function serialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] = bytes[0]! & 0x7f;
  return bytes.toString("hex");
}

async function newKeys(): Promise<CryptoKeyPair> {
  return (await subtle.generateKey(ALGORITHM, true, ["sign", "verify"])) as CryptoKeyPair;
}

async function keyPem(key: CryptoKey): Promise<string> {
  return `${x509.PemConverter.encode(await subtle.exportKey("pkcs8", key), "PRIVATE KEY")}\n`;
}

/** From an hour back to `days` ahead of `now`, never past `until` (an issuer's own end). */
function validity(now: Date, days: number, until?: Date): { notBefore: Date; notAfter: Date } {
  const notAfter = new Date(now.getTime() + days * DAY_MS);
  return { notBefore: new Date(now.getTime() - CLOCK_SKEW_MS), notAfter: until !== undefined && until < notAfter ? until : notAfter };
}

/**
 * Makes the mesh's CA (R71): a fresh P-256 key and a self-signed certificate `CN=mesh-ca`, allowed
 * to sign certificates only (path length 0), valid twenty years from `now`. The key is the caller's
 * to keep (0600, never logged).
 */
export async function makeMeshCa(now: Date = new Date()): Promise<KeyedCertificate> {
  const keys = await newKeys();
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serialNumber(), name: "CN=mesh-ca", ...validity(now, CA_DAYS), signingAlgorithm: ALGORITHM, keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { certificate: `${certificate.toString("pem")}\n`, key: await keyPem(keys.privateKey) };
}

/**
 * Issues the bus's certificate (R71) from `ca` for `names` (IP addresses as IP entries, the rest
 * as DNS entries), with a fresh key: valid for a server and for the cluster's routes (which
 * present it as clients too). `certificate` is the chain nats-server presents, the bus's
 * certificate then the CA's, so a client holding only the CA's fingerprint can find it. Throws
 * an Error when `names` is empty or `ca` is not a CA certificate and its key.
 */
export async function issueBusCertificate(ca: KeyedCertificate, names: readonly string[], now: Date = new Date()): Promise<KeyedCertificate> {
  if (names.length === 0) throw new Error("the bus certificate needs at least one name (R71)");
  const authority = new x509.X509Certificate(ca.certificate);
  const signingKey = await subtle.importKey("pkcs8", x509.PemConverter.decodeFirst(ca.key), ALGORITHM, false, ["sign"]);
  const keys = await newKeys();
  const leaf = await x509.X509CertificateGenerator.create({
    serialNumber: serialNumber(), subject: "CN=mesh-bus", issuer: authority.subject, ...validity(now, LEAF_DAYS, authority.notAfter),
    signingAlgorithm: ALGORITHM, publicKey: keys.publicKey, signingKey,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyAgreement, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth]),
      new x509.SubjectAlternativeNameExtension(names.map((name) => ({ type: isAddressName(name) ? "ip" : "dns", value: name }))),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(authority),
    ],
  });
  if (!(await leaf.verify({ publicKey: authority, date: now }))) throw new Error("the mesh CA's key does not match its certificate");
  return { certificate: `${leaf.toString("pem")}\n${authority.toString("pem")}\n`, key: await keyPem(keys.privateKey) };
}

/**
 * The names a PEM certificate (the first of a chain) carries in its subjectAltName, normalised as
 * busCertificateNames writes them (certificateNames: `IP Address:0:0:0:0:0:0:0:1` → `::1`), so
 * the two compare; empty when it has none. Throws Node's error when `pem` is not a certificate.
 */
export function namesOfCertificate(pem: string): string[] {
  const alt = new NodeCertificate(pem).subjectAltName ?? "";
  return certificateNames(alt.split(", ").flatMap((entry) => {
    const match = /^(?:DNS|IP Address):(.+)$/.exec(entry.trim());
    return match ? [match[1]!] : [];
  }));
}

/**
 * The certificate and key of a mesh made before R71 (its bus's own self-signed certificate, made
 * by `openssl req -x509`: CA:TRUE, no key usage) as the mesh's CA, the key as PKCS#8 PEM; or
 * undefined when `certificate` may not sign others (not self-signed, not CA:TRUE, or a key usage
 * without keyCertSign). Keeping it as the CA keeps every pin, the records' fingerprint and each
 * module's certificate.pem valid (R71: nobody locked out). Throws Node's error when `key` is no key.
 */
export function adoptableCa(certificate: string, key: string): KeyedCertificate | undefined {
  const pem = certificatesOf(certificate)[0];
  if (pem === undefined) return undefined;
  const own = new x509.X509Certificate(pem);
  const basic = own.getExtension(x509.BasicConstraintsExtension);
  const usage = own.getExtension(x509.KeyUsagesExtension);
  if (own.subject !== own.issuer || basic?.ca !== true) return undefined;
  if (usage !== null && (usage.usages & x509.KeyUsageFlags.keyCertSign) === 0) return undefined;
  if (!new NodeCertificate(pem).verify(new NodeCertificate(pem).publicKey)) return undefined;
  const pkcs8 = createPrivateKey(key).export({ type: "pkcs8", format: "pem" }).toString();
  return { certificate: pem, key: pkcs8 };
}
