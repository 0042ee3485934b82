import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { writeFileDurable } from "../src/files/index.ts";
import { join } from "node:path";
import { isIP } from "node:net";
import { certificateFingerprint } from "../src/crypto/secrets.ts";

/**
 * The bus's own TLS identity (R34): an EC P-256 key and a self-signed certificate made with
 * `openssl`. Clients of the mesh pin its SHA-256 fingerprint; the names in its SANs (the genesis
 * host, localhost, 127.0.0.1 and the overlay names the mesh knows) are there so standard Go tools
 * (the `nats` CLI) accept it too: Go refuses a certificate that names nothing.
 */

/** File names of the bus's TLS key and certificate inside the mesh folder. */
export const TLS_KEY_FILE = "bus-key.pem";
export const TLS_CERT_FILE = "bus-cert.pem";

/** One line error of the installer: what is wrong and what to do (bad configuration, R35). */
export class InstallerError extends Error {
  override readonly name = "InstallerError";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** The SAN entries for `names`: `IP:` for addresses, `DNS:` for host names; deduplicated. */
export function subjectAltNames(names: readonly string[]): string {
  const unique = [...new Set(names.filter((name) => name.length > 0))];
  return unique.map((name) => (isIP(name) ? `IP:${name}` : `DNS:${name}`)).join(",");
}

/**
 * Makes the bus's key (`bus-key.pem`, mode 0600) and a self-signed certificate (`bus-cert.pem`,
 * ten years) in `dir`, naming `names` in its SANs (localhost and 127.0.0.1 are always added).
 * Returns the two paths and the certificate's SHA-256 fingerprint (`AA:BB:...`, R34).
 * Throws InstallerError (one line) when `openssl` is missing or fails.
 */
export function makeBusCertificate(dir: string, names: readonly string[]): { keyFile: string; certFile: string; fingerprint: string } {
  const keyFile = join(dir, TLS_KEY_FILE);
  const certFile = join(dir, TLS_CERT_FILE);
  // The key file exists, empty and 0600, before openssl writes the key into it (it keeps the mode).
  writeFileDurable(keyFile, "", { mode: 0o600 });
  const sans = subjectAltNames([...names, "localhost", "127.0.0.1"]);
  const run = spawnSync(
    "openssl",
    [
      "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
      "-keyout", keyFile, "-out", certFile, "-days", "3650", "-subj", "/CN=mesh-bus",
      "-addext", `subjectAltName=${sans}`,
    ],
    { encoding: "utf8" },
  );
  if (run.error) throw new InstallerError("openssl is not installed: run `apt-get install -y openssl` and try again", { cause: run.error });
  if (run.status !== 0) {
    const reason = (run.stderr ?? "").trim().split("\n").pop() ?? "unknown error";
    throw new InstallerError(`openssl could not make the bus certificate: ${reason}`);
  }
  // openssl neither fsyncs nor guarantees the mode: both are rewritten durably (R54), the key 0600.
  writeFileDurable(keyFile, readFileSync(keyFile), { mode: 0o600 });
  const pem = readFileSync(certFile, "utf8");
  writeFileDurable(certFile, pem, { mode: 0o644 });
  return { keyFile, certFile, fingerprint: certificateFingerprint(pem) };
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
