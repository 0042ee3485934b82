import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { newNodeKeyPair, newUserKey, publicKeyOfSeed } from "../crypto/secrets.ts";
import { BusCredential, NKEY_SEED, NKEY_USER } from "../bus/connect.ts";
import { CredentialFileError, makeFolderDurable, readBusCredential, removeFileDurable, writeBusCredential, writeFileDurable } from "../files/index.ts";

/**
 * The node's own key pairs and bus credential, kept in its state folder (DESIGN.md section 7).
 * Both pairs are generated here, on the node, and no private half ever leaves it (R64):
 *
 * - `<state>/node.key`: the X25519 private key (base64 PKCS#8 DER), mode 0600; it opens every
 *   secret the controller seals to this node (its modules' seeds, provisions).
 * - `<state>/node.pub`: that public key (base64 SPKI DER), given to `mesh node enrol --key`.
 * - `<state>/node.seed`: the node's nkey user seed (`SU...`), mode 0600: its bus identity (R63).
 * - `<state>/node.nkey`: that seed's public key (`U...`), given to `mesh node enrol --nkey`.
 * - `<state>/node.seed.next`: a pending seed made by `mesh host rotate-key` (0600), until the mesh
 *   names its public key as the node's (then it becomes `node.seed`).
 * - `<state>/credential.json`: the node's own bus credential `{address, user, seed, fingerprint}`,
 *   mode 0600, the seed being `node.seed`'s.
 */

export const NODE_KEY_FILE = "node.key";
export const NODE_PUBLIC_KEY_FILE = "node.pub";
export const NODE_SEED_FILE = "node.seed";
export const NODE_NKEY_FILE = "node.nkey";
export const NODE_PENDING_SEED_FILE = "node.seed.next";
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
 * Makes the node's two key pairs under `stateDir` (created 0700 when missing): the X25519 pair
 * secrets are sealed to and the nkey pair it dials the bus with (R63, R64). Returns both public
 * keys and the private key's path. Throws HostStateError `key-exists` when a key is there already,
 * unless `force` (which replaces both: secrets sealed to the old key no longer open, the old nkey
 * is no longer this node's; the node must be enrolled again).
 */
export function initHostKeys(stateDir: string, { force = false }: { force?: boolean } = {}): { publicKey: string; nkey: string; keyFile: string } {
  makeFolderDurable(stateDir);
  const keyFile = join(stateDir, NODE_KEY_FILE);
  if (existsSync(keyFile) && !force) {
    throw new HostStateError("key-exists", `${keyFile} exists: this node has a key already (pass --force to replace it; the mesh must then enrol the new key)`);
  }
  const pair = newNodeKeyPair();
  const user = newUserKey();
  writeFileDurable(keyFile, `${pair.privateKey}\n`, { mode: 0o600 });
  writeFileDurable(join(stateDir, NODE_PUBLIC_KEY_FILE), `${pair.publicKey}\n`, { mode: 0o644 });
  writeFileDurable(join(stateDir, NODE_SEED_FILE), `${user.seed}\n`, { mode: 0o600 });
  writeFileDurable(join(stateDir, NODE_NKEY_FILE), `${user.publicKey}\n`, { mode: 0o644 });
  if (existsSync(join(stateDir, NODE_PENDING_SEED_FILE))) removeFileDurable(join(stateDir, NODE_PENDING_SEED_FILE));
  return { publicKey: pair.publicKey, nkey: user.publicKey, keyFile };
}

/** The node's private key from `<stateDir>/node.key`. Throws HostStateError `no-key` when absent. */
export function readNodePrivateKey(stateDir: string): string {
  const keyFile = join(stateDir, NODE_KEY_FILE);
  if (!existsSync(keyFile)) throw new HostStateError("no-key", `${keyFile} does not exist: run \`mesh host init --state ${stateDir}\` first`);
  return readFileSync(keyFile, "utf8").trim();
}

function readSeedFile(file: string): string | undefined {
  if (!existsSync(file)) return undefined;
  const seed = readFileSync(file, "utf8").trim();
  if (!NKEY_SEED.test(seed)) throw new HostStateError("bad-credential", `${file} is not an nkey user seed: run \`mesh host init --force\` or \`mesh host rotate-key\` again`);
  return seed;
}

/**
 * The node's nkey seeds (R64): `current` from `<stateDir>/node.seed` (undefined when the folder was
 * made before nkeys) and `pending` from `node.seed.next` (undefined unless a rotation waits).
 * Throws HostStateError `bad-credential` when a file holds something else than a seed.
 */
export function readNodeSeeds(stateDir: string): { current: string | undefined; pending: string | undefined } {
  return { current: readSeedFile(join(stateDir, NODE_SEED_FILE)), pending: readSeedFile(join(stateDir, NODE_PENDING_SEED_FILE)) };
}

/**
 * `mesh host rotate-key`: makes a pending nkey pair for this node (R50, R64) in
 * `<stateDir>/node.seed.next` (0600) and returns its public key, for `mesh credential rotate node
 * <name> --nkey <key>`. The node keeps dialling with its current seed; when the bus refuses it (the
 * list with the new key was installed) it tries the pending one, and once its declaration names
 * the new key it makes it its current one (promotePendingSeed). A pending seed already there is
 * kept and its key returned again (the rotation may be recorded already), unless `force`.
 * Throws HostStateError `no-key` when the node has no key yet.
 */
export function rotateNodeKey(stateDir: string, { force = false }: { force?: boolean } = {}): { nkey: string; file: string } {
  readNodePrivateKey(stateDir);
  const file = join(stateDir, NODE_PENDING_SEED_FILE);
  const pending = readSeedFile(file);
  if (pending !== undefined && !force) return { nkey: publicKeyOfSeed(pending), file };
  const user = newUserKey();
  writeFileDurable(file, `${user.seed}\n`, { mode: 0o600 });
  return { nkey: user.publicKey, file };
}

/**
 * Makes the pending seed the node's current one, once the mesh named its public key as the node's
 * (a declaration's `self`, an enrol or rotate reply): writes `node.seed` and `node.nkey`, updates the
 * seed in `credentialFile` when it exists, then removes `node.seed.next` (each step durable, R54;
 * a crash between them leaves both files holding the new seed, which is harmless). Returns the new
 * seed, or undefined when nothing was pending.
 */
export function promotePendingSeed(stateDir: string, credentialFile: string = join(stateDir, NODE_CREDENTIAL_FILE)): string | undefined {
  const { pending } = readNodeSeeds(stateDir);
  if (pending === undefined) return undefined;
  writeFileDurable(join(stateDir, NODE_SEED_FILE), `${pending}\n`, { mode: 0o600 });
  writeFileDurable(join(stateDir, NODE_NKEY_FILE), `${publicKeyOfSeed(pending)}\n`, { mode: 0o644 });
  if (existsSync(credentialFile)) {
    try {
      const current = readBusCredential(credentialFile);
      const { password: _password, ...rest } = current;
      writeBusCredential(credentialFile, { ...rest, seed: pending });
    } catch (error) {
      if (!(error instanceof CredentialFileError)) throw error;
    }
  }
  removeFileDurable(join(stateDir, NODE_PENDING_SEED_FILE));
  return pending;
}

/**
 * The reply of `mesh node enrol` (and the node part of `mesh credential rotate node`): the node's
 * credential without a secret, naming the nkey the mesh holds for it (R64).
 */
export type EnrolReply = {
  node?: string;
  credential: { address: string; addresses?: string[]; user: string; nkey: string; fingerprint?: string };
};

function isEnrolReply(value: unknown): value is EnrolReply {
  const credential = (value as { credential?: { nkey?: unknown; seed?: unknown; password?: unknown } } | null)?.credential;
  return typeof credential?.nkey === "string" && credential.seed === undefined && credential.password === undefined;
}

/** The seeds a node holds, read when needed (credentialFrom). */
export type NodeSeeds = () => { current: string | undefined; pending: string | undefined };

/**
 * A bus credential from either form a node is given: a credential `{address, user, seed,
 * fingerprint}`, or the reply of `mesh node enrol` / `mesh credential rotate node` (`{node,
 * credential: {address, user, nkey, fingerprint}}`, or that reply wrapped in `{ok, reply}`, or the
 * bare `{address, user, nkey, fingerprint}`), joined with the node's own seed whose public key is
 * `nkey` (the current one, or the pending one of a rotation: `promoted` says so, and the caller
 * makes it current). An empty fingerprint is dropped. An address that is not `tls://` is refused
 * (R67: the credential's shape, BusCredential). Throws
 * HostStateError `bad-credential` naming what is wrong (never the seed, R3), among which a reply
 * naming a key this node does not hold.
 */
export function credentialFrom(value: unknown, seeds: NodeSeeds): BusCredential {
  return credentialAndPromotion(value, seeds).credential;
}

function credentialAndPromotion(value: unknown, seeds: NodeSeeds): { credential: BusCredential; promoted: boolean } {
  let candidate: unknown = value;
  let promoted = false;
  const wrapped = (value as { reply?: unknown } | null)?.reply;
  if (!isEnrolReply(candidate) && isEnrolReply(wrapped)) candidate = wrapped;
  // The bare credential `mesh credential rotate node` prints ({address, user, nkey, ...}).
  if (!isEnrolReply(candidate) && isEnrolReply({ credential: candidate })) candidate = { credential: candidate };
  if (isEnrolReply(candidate)) {
    const { address, addresses, user, nkey, fingerprint } = candidate.credential;
    if (!NKEY_USER.test(nkey)) throw new HostStateError("bad-credential", "the reply's nkey is not an nkey user public key (U...)");
    const { current, pending } = seeds();
    let seed: string;
    if (current !== undefined && publicKeyOfSeed(current) === nkey) seed = current;
    else if (pending !== undefined && publicKeyOfSeed(pending) === nkey) { seed = pending; promoted = true; }
    else throw new HostStateError("bad-credential", `the reply names nkey ${nkey}, which is not this node's (neither node.seed nor a pending node.seed.next): was the node enrolled with another folder's key?`);
    // R62: a cluster's reply lists every server; the credential keeps them all.
    candidate = { address, ...(addresses ? { addresses } : {}), user, seed, ...(fingerprint ? { fingerprint } : {}) };
  } else if (candidate && typeof candidate === "object" && (candidate as { fingerprint?: unknown }).fingerprint === "") {
    const { fingerprint: _empty, ...rest } = candidate as Record<string, unknown>;
    candidate = rest;
  }
  const parsed = BusCredential.safeParse(candidate);
  if (!parsed.success) {
    // The schema's messages name the form, never a value (R3): a seed's field says "an nkey user seed".
    const fields = parsed.error.issues.map((issue) => `${issue.path.join(".") || "(root)"}: ${issue.message}`).join("; ");
    throw new HostStateError("bad-credential", `not a bus credential nor an enrol reply (check: ${fields})`);
  }
  return { credential: parsed.data, promoted };
}

/**
 * Reads a credential file (either form, see credentialFrom) with the one credential file reader
 * (files/credentialFile.ts) and returns the credential. Throws HostStateError `bad-credential`
 * when the file is unreadable, not JSON or not a credential.
 */
export function readCredentialFile(path: string, stateDir: string): BusCredential {
  try {
    return readBusCredential(path, { open: (value) => credentialFrom(value, () => readNodeSeeds(stateDir)) });
  } catch (error) {
    if (error instanceof CredentialFileError) throw new HostStateError("bad-credential", error.message, { cause: error });
    throw error;
  }
}

/**
 * Joins an enrol or rotate reply with the node's own seed (or checks a credential) and keeps the
 * credential in `<stateDir>/credential.json`, mode 0600; a reply naming the pending key makes it
 * the node's current one (promotePendingSeed). Returns the file's path and the credential's public part.
 */
export function saveNodeCredential(stateDir: string, value: unknown): { file: string; address: string; user: string } {
  const { credential, promoted } = credentialAndPromotion(value, () => readNodeSeeds(stateDir));
  makeFolderDurable(stateDir);
  const file = join(stateDir, NODE_CREDENTIAL_FILE);
  writeBusCredential(file, credential);
  if (promoted) promotePendingSeed(stateDir, file);
  return { file, address: credential.address, user: credential.user };
}
