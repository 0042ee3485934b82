import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { writeFileDurable } from "../files/index.ts";
import { adoptableCa, issueBusCertificate, namesOfCertificate, type KeyedCertificate } from "../crypto/ca.ts";
import { certificateNames, LOOPBACK_NAMES, namesDiffer } from "../projections/index.ts";

/**
 * The bus's certificate on the machine that runs the bus (R71): its files beside the mesh's CA, and
 * its renewal by the broker's holder when a push's user list names other hosts than it carries.
 * The CA's key stays in that folder: nothing of it travels.
 */

/** File names of the bus's TLS key and certificate (its chain: the bus's, then the CA's), in the mesh folder. */
export const TLS_KEY_FILE = "bus-key.pem";
export const TLS_CERT_FILE = "bus-cert.pem";
/** File names of the mesh CA's certificate and key (R71), beside the bus's, in the mesh folder. */
export const CA_CERT_FILE = "mesh-ca.pem";
export const CA_KEY_FILE = "mesh-ca-key.pem";

/**
 * Issues the bus's certificate from `ca` for `names` plus loopback and writes its key (0600) and
 * chain into `dir` (R54: durably). Returns the two paths.
 */
export async function writeBusCertificate(dir: string, ca: KeyedCertificate, names: readonly string[]): Promise<{ keyFile: string; certFile: string }> {
  const bus = await issueBusCertificate(ca, certificateNames([...names, ...LOOPBACK_NAMES]));
  const keyFile = join(dir, TLS_KEY_FILE);
  const certFile = join(dir, TLS_CERT_FILE);
  writeFileDurable(keyFile, bus.key, { mode: 0o600 });
  writeFileDurable(certFile, bus.certificate, { mode: 0o644 });
  return { keyFile, certFile };
}

/** The `cert_file` a nats-server configuration's `tls` block names, or undefined (a bus without TLS). Pure. */
export function certFileOfConfig(configText: string): string | undefined {
  return /\bcert_file\s*:\s*"([^"]+)"/.exec(configText)?.[1];
}

/** The `key_file` a nats-server configuration's `tls` block names, or undefined. Pure. */
export function keyFileOfConfig(configText: string): string | undefined {
  return /\bkey_file\s*:\s*"([^"]+)"/.exec(configText)?.[1];
}

/**
 * The mesh's CA in `dir`; a mesh made before R71 has none, and its bus's own self-signed
 * certificate and key (`certFile`, `keyFile`) are adopted as the CA (adoptableCa), written beside
 * them (the key 0600, R54: durably), so every pin stays valid. Returns the CA and whether it was
 * adopted now; undefined when there is none and the bus's certificate cannot be one.
 */
function meshCaOf(dir: string, certFile: string, keyFile: string | undefined): { ca: KeyedCertificate; adopted: boolean } | undefined {
  const caCert = join(dir, CA_CERT_FILE);
  const caKey = join(dir, CA_KEY_FILE);
  if (existsSync(caKey) && existsSync(caCert)) return { ca: { certificate: readFileSync(caCert, "utf8"), key: readFileSync(caKey, "utf8") }, adopted: false };
  if (keyFile === undefined || !existsSync(keyFile)) return undefined;
  const ca = adoptableCa(readFileSync(certFile, "utf8"), readFileSync(keyFile, "utf8"));
  if (ca === undefined) return undefined;
  writeFileDurable(caKey, ca.key, { mode: 0o600 });
  writeFileDurable(caCert, ca.certificate, { mode: 0o644 });
  return { ca, adopted: true };
}

/**
 * Renews the bus's certificate for `names` (R71) when the one the configuration `configFile` names
 * carries other names: issued from the mesh's CA beside it, written in its place, for the reload
 * that follows to present. A mesh made before R71 moves over here, at its first push: its bus's
 * self-signed certificate becomes the CA (meshCaOf) and a certificate issued by it replaces it;
 * the names that certificate carried are kept in every one issued after (a CA made at genesis
 * carries none). Returns true when it wrote a new one; false when the names are the same, the bus
 * has no TLS, or there is no CA and the bus's certificate cannot be one (it is kept).
 */
export async function renewBusCertificate(configFile: string, names: readonly string[]): Promise<boolean> {
  const configText = readFileSync(configFile, "utf8");
  const certFile = certFileOfConfig(configText);
  if (certFile === undefined || !existsSync(certFile)) return false;
  const dir = dirname(certFile);
  const found = meshCaOf(dir, certFile, keyFileOfConfig(configText));
  if (found === undefined) return false;
  const wanted = certificateNames([...names, ...namesOfCertificate(found.ca.certificate), ...LOOPBACK_NAMES]);
  if (!found.adopted && !namesDiffer(namesOfCertificate(readFileSync(certFile, "utf8")), wanted)) return false;
  await writeBusCertificate(dir, found.ca, wanted);
  return true;
}
