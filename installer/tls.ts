import { readFileSync } from "node:fs";
import { writeFileDurable } from "../src/files/index.ts";
import { join } from "node:path";
import { certificateFingerprint } from "../src/crypto/secrets.ts";
import { makeMeshCa, type KeyedCertificate } from "../src/crypto/ca.ts";
import { CA_CERT_FILE, CA_KEY_FILE, writeBusCertificate } from "../src/host/busCertificate.ts";

/**
 * The mesh's certificate authority and the bus's TLS identity on disk (R34, R71): the CA's key and
 * certificate, made once at genesis, and the bus's key and certificate, issued by the CA for every
 * name a principal is told to dial (busCertificateNames) and reissued when those change. Made with
 * @peculiar/x509 (src/crypto/ca.ts), no `openssl`.
 */

export { CA_CERT_FILE, CA_KEY_FILE, TLS_CERT_FILE, TLS_KEY_FILE } from "../src/host/busCertificate.ts";

import { InstallerError } from "./errors.ts";

export { InstallerError };

/** The four files of a mesh's TLS identity in `dir`, and the CA's SHA-256 fingerprint clients pin (R71). */
export type BusCertificateFiles = { keyFile: string; certFile: string; caFile: string; caKeyFile: string; fingerprint: string };

/**
 * Makes the mesh's CA (`mesh-ca.pem`, its key `mesh-ca-key.pem` 0600) in `dir` and issues the
 * bus's key (`bus-key.pem`, 0600) and certificate (`bus-cert.pem`, the chain) from it, naming
 * `names` (localhost, 127.0.0.1 and ::1 are always added; R71). Every file is written durably.
 * Returns the paths and the CA's SHA-256 fingerprint (`AA:BB:...`), which the mesh's clients pin (R34, R71).
 */
export async function makeBusCertificate(dir: string, names: readonly string[]): Promise<BusCertificateFiles> {
  const ca = await makeMeshCa();
  writeFileDurable(join(dir, CA_KEY_FILE), ca.key, { mode: 0o600 });
  writeFileDurable(join(dir, CA_CERT_FILE), ca.certificate, { mode: 0o644 });
  return issueInto(dir, ca, names);
}

/**
 * Reissues the bus's certificate in `dir` from the mesh's CA there for `names` (plus loopback,
 * R71), replacing `bus-key.pem` and `bus-cert.pem`. Throws InstallerError naming the file when the
 * CA's certificate or key cannot be read.
 */
export async function reissueBusCertificate(dir: string, names: readonly string[]): Promise<BusCertificateFiles> {
  return issueInto(dir, readMeshCa(dir), names);
}

/** The mesh CA's certificate and key in `dir`. Throws InstallerError naming the file when one cannot be read. */
export function readMeshCa(dir: string): KeyedCertificate {
  const read = (file: string): string => {
    try {
      return readFileSync(join(dir, file), "utf8");
    } catch (error) {
      throw new InstallerError(`the mesh CA's ${join(dir, file)} cannot be read (${(error as NodeJS.ErrnoException).code ?? "error"}) (R71: genesis makes the CA)`, { cause: error });
    }
  };
  return { certificate: read(CA_CERT_FILE), key: read(CA_KEY_FILE) };
}

async function issueInto(dir: string, ca: KeyedCertificate, names: readonly string[]): Promise<BusCertificateFiles> {
  const { keyFile, certFile } = await writeBusCertificate(dir, ca, names);
  return { keyFile, certFile, caFile: join(dir, CA_CERT_FILE), caKeyFile: join(dir, CA_KEY_FILE), fingerprint: certificateFingerprint(ca.certificate) };
}

/**
 * Reads a PEM certificate and returns its SHA-256 fingerprint. Throws InstallerError naming the
 * file when it is missing or not a certificate.
 */
export function fingerprintOfFile(certFile: string): string {
  let pem: string;
  try {
    pem = readFileSync(certFile, "utf8");
  } catch (error) {
    throw new InstallerError(`the bus certificate ${certFile} cannot be read: ${(error as NodeJS.ErrnoException).code ?? "error"}`, { cause: error });
  }
  try {
    return certificateFingerprint(pem);
  } catch (error) {
    throw new InstallerError(`the bus certificate ${certFile} is not a PEM certificate`, { cause: error });
  }
}
