import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { writeFileDurable } from "../files/index.ts";
import { issueBusCertificate, namesOfCertificate, type KeyedCertificate } from "../crypto/ca.ts";
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

/**
 * Renews the bus's certificate for `names` (R71) when the one the configuration `configFile` names
 * carries other names: issued from the mesh's CA beside it, written in its place, for the reload
 * that follows to present. Returns true when it wrote a new one; false when the names are the same,
 * the bus has no TLS, or no CA is beside its certificate (a mesh made before R71 keeps its own).
 */
export async function renewBusCertificate(configFile: string, names: readonly string[]): Promise<boolean> {
  const certFile = certFileOfConfig(readFileSync(configFile, "utf8"));
  if (certFile === undefined || !existsSync(certFile)) return false;
  const dir = dirname(certFile);
  if (!existsSync(join(dir, CA_KEY_FILE)) || !existsSync(join(dir, CA_CERT_FILE))) return false;
  const wanted = certificateNames([...names, ...LOOPBACK_NAMES]);
  if (!namesDiffer(namesOfCertificate(readFileSync(certFile, "utf8")), wanted)) return false;
  const ca = { certificate: readFileSync(join(dir, CA_CERT_FILE), "utf8"), key: readFileSync(join(dir, CA_KEY_FILE), "utf8") };
  await writeBusCertificate(dir, ca, wanted);
  return true;
}
