import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { newNodeKeyPair, openAsNode } from "../crypto/secrets.ts";
import { BusCredential } from "../bus/connect.ts";
import { CredentialFileError, makeFolderDurable, readBusCredential, writeBusCredential, writeFileDurable } from "../files/index.ts";

/**
 * The node's own key pair and bus credential, kept in its state folder (DESIGN.md section 7).
 *
 * - `<state>/node.key`: the X25519 private key (base64 PKCS#8 DER), mode 0600; it opens every
 *   secret the controller seals to this node.
 * - `<state>/node.pub`: the public key (base64 SPKI DER), given to `mesh node enrol --key`.
 * - `<state>/credential.json`: the node's own bus credential `{address, user, password,
 *   fingerprint}`, mode 0600 (R3: the password is kept nowhere else).
 */

export const NODE_KEY_FILE = "node.key";
export const NODE_PUBLIC_KEY_FILE = "node.pub";
export const NODE_CREDENTIAL_FILE = "credential.json";

/** A host's state folder problem: missing key, existing key, unreadable credential. `code` is stable. */
export class HostStateError extends Error {
  override readonly name = "HostStateError";
  readonly code: "key-exists" | "no-key" | "bad-credential";
  constructor(code: HostStateError["code"], message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/**
 * Makes the node's key pair under `stateDir` (created 0700 when missing) and returns the public key
 * and the private key's path. Throws HostStateError `key-exists` when a key is there already, unless
 * `force` (which replaces it: secrets sealed to the old key no longer open).
 */
export function initHostKeys(stateDir: string, { force = false }: { force?: boolean } = {}): { publicKey: string; keyFile: string } {
  makeFolderDurable(stateDir);
  const keyFile = join(stateDir, NODE_KEY_FILE);
  if (existsSync(keyFile) && !force) {
    throw new HostStateError("key-exists", `${keyFile} exists: this node has a key already (pass --force to replace it; the mesh must then enrol the new key)`);
  }
  const pair = newNodeKeyPair();
  writeFileDurable(keyFile, `${pair.privateKey}\n`, { mode: 0o600 });
  writeFileDurable(join(stateDir, NODE_PUBLIC_KEY_FILE), `${pair.publicKey}\n`, { mode: 0o644 });
  return { publicKey: pair.publicKey, keyFile };
}

/** The node's private key from `<stateDir>/node.key`. Throws HostStateError `no-key` when absent. */
export function readNodePrivateKey(stateDir: string): string {
  const keyFile = join(stateDir, NODE_KEY_FILE);
  if (!existsSync(keyFile)) throw new HostStateError("no-key", `${keyFile} does not exist: run \`mesh host init --state ${stateDir}\` first`);
  return readFileSync(keyFile, "utf8").trim();
}

/** The reply of `mesh node enrol`: the node's password sealed to its public key. */
export type EnrolReply = {
  node?: string;
  credential: { address: string; addresses?: string[]; user: string; sealedPassword: string; fingerprint?: string };
};

function isEnrolReply(value: unknown): value is EnrolReply {
  const credential = (value as { credential?: { sealedPassword?: unknown } } | null)?.credential;
  return typeof credential?.sealedPassword === "string";
}

/**
 * A bus credential from either form a node is given: a credential `{address, user, password,
 * fingerprint}`, or the reply of `mesh node enrol` (`{node, credential: {address, user,
 * sealedPassword, fingerprint}}`, or that reply wrapped in `{ok, reply}`; the rotate reply and its
 * `--json` form alike; or the bare `{address, user, sealedPassword, fingerprint}` it prints), opened with the node's
 * private key. An empty fingerprint is dropped (a `nats://` bus has none). Throws HostStateError
 * `bad-credential` naming what is wrong (never the password, R3).
 */
export function credentialFrom(value: unknown, privateKey: string | (() => string)): BusCredential {
  let candidate: unknown = value;
  const wrapped = (value as { reply?: unknown } | null)?.reply;
  if (!isEnrolReply(candidate) && isEnrolReply(wrapped)) candidate = wrapped;
  // The bare credential `mesh credential rotate node` prints for the node ({address, user, sealedPassword, ...}).
  if (!isEnrolReply(candidate) && isEnrolReply({ credential: candidate })) candidate = { credential: candidate };
  if (isEnrolReply(candidate)) {
    const { address, addresses, user, sealedPassword, fingerprint } = candidate.credential;
    let password: string;
    try {
      password = openAsNode(typeof privateKey === "function" ? privateKey() : privateKey, sealedPassword);
    } catch (error) {
      if (error instanceof HostStateError) throw error;
      throw new HostStateError("bad-credential", "the enrol reply's password does not open with this node's key: was the node enrolled with another key?", { cause: error });
    }
    // R62: a cluster's reply lists every server; the credential keeps them all.
    candidate = { address, ...(addresses ? { addresses } : {}), user, password, ...(fingerprint ? { fingerprint } : {}) };
  } else if (candidate && typeof candidate === "object" && (candidate as { fingerprint?: unknown }).fingerprint === "") {
    const { fingerprint: _empty, ...rest } = candidate as Record<string, unknown>;
    candidate = rest;
  }
  const parsed = BusCredential.safeParse(candidate);
  if (!parsed.success) {
    const fields = parsed.error.issues.map((issue) => issue.path.join(".") || "(root)").join(", ");
    throw new HostStateError("bad-credential", `not a bus credential nor an enrol reply (check: ${fields})`);
  }
  return parsed.data;
}

/**
 * Reads a credential file (either form, see credentialFrom) with the one credential file reader
 * (files/credentialFile.ts) and returns the credential. Throws HostStateError `bad-credential`
 * when the file is unreadable, not JSON or not a credential.
 */
export function readCredentialFile(path: string, stateDir: string): BusCredential {
  try {
    return readBusCredential(path, { open: (value) => credentialFrom(value, () => readNodePrivateKey(stateDir)) });
  } catch (error) {
    if (error instanceof CredentialFileError) throw new HostStateError("bad-credential", error.message, { cause: error });
    throw error;
  }
}

/**
 * Opens an enrol reply (or checks a credential) and keeps the credential in
 * `<stateDir>/credential.json`, mode 0600. Returns the file's path and the credential's public part.
 */
export function saveNodeCredential(stateDir: string, value: unknown): { file: string; address: string; user: string } {
  const credential = credentialFrom(value, () => readNodePrivateKey(stateDir));
  makeFolderDurable(stateDir);
  const file = join(stateDir, NODE_CREDENTIAL_FILE);
  writeBusCredential(file, credential);
  return { file, address: credential.address, user: credential.user };
}
