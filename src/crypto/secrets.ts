import {
  randomBytes, createCipheriv, createDecipheriv, createHmac, generateKeyPairSync, createPublicKey, createPrivateKey,
  diffieHellman, hkdfSync, timingSafeEqual, X509Certificate, type KeyObject,
} from "node:crypto";
import bcrypt from "bcryptjs";
import { NKEY_PREFIX_SEED, NKEY_PREFIX_USER, base32Decode, crc16, ed25519PrivateKey, ed25519PublicBytes, withChecksum } from "./nkeyEncoding.ts";

/**
 * The mesh's secrets, in the shell (never imported by decide, evolve or compose).
 *
 * - A principal's secret is an nkey user seed (R63): ed25519; the bus's user list holds its public
 *   key alone (`U...`), so the list holds no secret and no hash, and a reload checks no bcrypt.
 * - Passwords (before nkeys, kept for a mesh whose records or bootstrap still hold them) are 32 random bytes, base64url: long random strings, so a low bcrypt cost loses
 *   nothing and keeps a user-list reload cheap (one comparison per connected client).
 * - The records hold each secret sealed with the mesh key (AES-256-GCM), never in the clear (5a).
 * - Secrets for one node travel sealed to that node's X25519 public key (ECDH with the sender's
 *   key + HKDF + AES-256-GCM), so only that node can open them.
 */

/**
 * bcrypt cost for bus passwords: bcrypt's minimum. The defence is the secret's 256 bits of
 * entropy, not the cost; and every user-list reload re-checks one hash per connected client
 * (measured on 2.9.10 with 1,000 connections: 6.8 s at cost 6, 1.7 s at cost 4).
 */
export const BCRYPT_COST = 4;

/** A fresh random password: 32 bytes, base64url (43 characters). */
export function newPassword(): string {
  return randomBytes(32).toString("base64url");
}

/** The bcrypt hash of a password, as nats-server's user list takes it. Takes a few milliseconds. */
export function hashPassword(password: string): string {
  return bcrypt.hashSync(password, BCRYPT_COST);
}

/** True when `password` matches the bcrypt `hash`. */
export function passwordMatches(password: string, hash: string): boolean {
  return bcrypt.compareSync(password, hash);
}

function ed25519PublicOf(rawSeed: Buffer): Buffer {
  return ed25519PublicBytes(ed25519PrivateKey(rawSeed));
}

function encodeUserKey(rawSeed: Buffer): { seed: string; publicKey: string } {
  const seed = withChecksum(Buffer.concat([Buffer.from([NKEY_PREFIX_SEED | (NKEY_PREFIX_USER >> 5), (NKEY_PREFIX_USER & 31) << 3]), rawSeed]));
  const publicKey = withChecksum(Buffer.concat([Buffer.from([NKEY_PREFIX_USER]), ed25519PublicOf(rawSeed)]));
  return { seed, publicKey };
}

/** A fresh nkey user key pair: the seed (`SU...`, the secret) and its public key (`U...`, R63). */
export function newUserKey(): { seed: string; publicKey: string } {
  return encodeUserKey(randomBytes(32));
}

/** The public key (`U...`) of an nkey user seed. Throws when `seed` is not one (shape or checksum). */
export function publicKeyOfSeed(seed: string): string {
  if (!/^SU[A-Z2-7]{56}$/.test(seed)) throw new Error("not an nkey user seed");
  const bytes = base32Decode(seed);
  const body = bytes.subarray(0, 34);
  if (bytes.length !== 36 || crc16(body) !== (bytes[34]! | (bytes[35]! << 8))) throw new Error("not an nkey user seed (checksum)");
  return encodeUserKey(Buffer.from(body.subarray(2))).publicKey;
}

/** True when `secret` is an nkey user seed (`SU...`), not a password (R63). */
export function isSeedSecret(secret: string): boolean {
  return /^SU[A-Z2-7]{56}$/.test(secret);
}

/**
 * True when `secret` is the secret of the recorded credential: an nkey seed whose public key is
 * the recorded `nkey`, or (a credential from before nkeys) a password matching the recorded bcrypt
 * `hash`. False for anything else, never a throw.
 */
export function secretMatches(secret: string, recorded: { nkey?: string | undefined; hash?: string | undefined }): boolean {
  if (isSeedSecret(secret)) {
    try {
      return recorded.nkey !== undefined && publicKeyOfSeed(secret) === recorded.nkey;
    } catch {
      return false;
    }
  }
  return recorded.hash !== undefined && passwordMatches(secret, recorded.hash);
}

/**
 * A fresh secret for the records (R63): a new nkey user seed, its public key (for the user list)
 * and the seed sealed by `seal` (the mesh key's, for the records). The seed itself is for a reply
 * or a seal to a node only, never an event (R3).
 */
export function newFreshSecret(seal: (seed: string) => string): { seed: string; nkey: string; sealed: string } {
  const { seed, publicKey } = newUserKey();
  return { seed, nkey: publicKey, sealed: seal(seed) };
}

/** A new mesh key: 32 random bytes, base64. */
export function newMeshKey(): string {
  return randomBytes(32).toString("base64");
}

function aeadSeal(key: Buffer, plaintext: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
  return [iv, cipher.getAuthTag(), body].map((b) => b.toString("base64url")).join(".");
}

function aeadOpen(key: Buffer, sealed: string): string {
  const [iv, tag, body] = sealed.split(".").map((p) => Buffer.from(p, "base64url"));
  if (!iv || !tag || !body) throw new Error("sealed secret is malformed");
  const decipher = createDecipheriv("aes-256-gcm", key, iv);
  decipher.setAuthTag(tag);
  return Buffer.concat([decipher.update(body), decipher.final()]).toString("utf8");
}

function meshKeyBytes(meshKey: string): Buffer {
  const key = Buffer.from(meshKey, "base64");
  if (key.length !== 32) throw new Error("the mesh key must be 32 bytes, base64 (MESH_KEY_FILE)");
  return key;
}

/** Seals a secret with the mesh key for the records. Output: `iv.tag.body`, base64url parts. */
export function sealWithMeshKey(meshKey: string, secret: string): string {
  return aeadSeal(meshKeyBytes(meshKey), secret);
}

/** Opens a secret sealed with the mesh key. Throws when the key is wrong or the data altered. */
export function openWithMeshKey(meshKey: string, sealed: string): string {
  return aeadOpen(meshKeyBytes(meshKey), sealed);
}

/**
 * What a declaration says of the records, as the controller vouches for it (R43): the node it was
 * composed for, its digest, and the records' sequence it was composed from.
 */
export type RecordsFact = { node: string; digest: string; recordsSequence: number };

/** The label the records tag's key is derived under: it is never the key that seals secrets. */
const RECORDS_TAG_INFO = "mesh-controller records tag 1";
let recordsTagKey: { meshKey: string; key: Buffer } | undefined;

function recordsTagKeyOf(meshKey: string): Buffer {
  if (recordsTagKey?.meshKey !== meshKey) {
    recordsTagKey = { meshKey, key: Buffer.from(hkdfSync("sha256", meshKeyBytes(meshKey), Buffer.alloc(0), RECORDS_TAG_INFO, 32)) };
  }
  return recordsTagKey.key;
}

/**
 * R43: the controller's tag on a declaration's RecordsFact: HMAC-SHA256 (base64url, 43
 * characters) under a key derived from the mesh key by HKDF with its own label, so the key that
 * seals the records' secrets is never used for anything else. Push adds it to every declaration;
 * the host echoes it in its reports; a report's records sequence is evidence that the records are
 * behind only when its tag verifies (recordsTagVerifies) for the node of the report's subject.
 * The mesh key is the controller's alone (no host holds it, no reply carries it) and lives outside
 * the records and the bus's store (MESH_KEY_FILE): restoring an older backup brings back older
 * records under the same key (their sealed secrets open only with it), so a tag the controller made
 * before the restore still verifies after it, which is what makes it evidence of the lost records.
 * Throws when the mesh key is not 32 bytes of base64.
 */
export function recordsTag(meshKey: string, fact: RecordsFact): string {
  // A JSON array: no two facts share a text (a node name cannot run into the digest).
  const text = JSON.stringify([RECORDS_TAG_INFO, fact.node, fact.digest, fact.recordsSequence]);
  return createHmac("sha256", recordsTagKeyOf(meshKey)).update(text).digest("base64url");
}

/**
 * True when `tag` is the controller's recordsTag on `fact` under `meshKey`; false for any other
 * tag, fact or shape, never a throw (a report is data from a node). Constant-time comparison.
 */
export function recordsTagVerifies(meshKey: string, fact: RecordsFact, tag: unknown): boolean {
  if (typeof tag !== "string" || !/^[A-Za-z0-9_-]{43}$/.test(tag)) return false;
  if (!Number.isSafeInteger(fact.recordsSequence) || fact.recordsSequence < 0) return false;
  const expected = Buffer.from(recordsTag(meshKey, fact), "base64url");
  const given = Buffer.from(tag, "base64url");
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** The first element of a seen tag's text: no seen tag is ever a records tag, nor the other way round. */
const SEEN_TAG_LABEL = "mesh-controller records seen 1";

/**
 * R68: the controller's tag on a records sequence it folded (`sequence`), sent with its replies
 * (`seen`) and echoed by the asker's CLI with every later command. HMAC-SHA256 (base64url, 43
 * characters) under the records tag's key (derived from the mesh key, which no principal holds),
 * over a text of its own label: so an operator can claim only a sequence the controller vouched
 * for, and a restore that loses the records keeps the key that makes the claim evidence. Throws
 * when the mesh key is not 32 bytes of base64.
 */
export function seenTag(meshKey: string, sequence: number): string {
  return createHmac("sha256", recordsTagKeyOf(meshKey)).update(JSON.stringify([SEEN_TAG_LABEL, sequence])).digest("base64url");
}

/**
 * True when `tag` is the controller's seenTag on `sequence` under `meshKey`; false for any other
 * tag, sequence or shape, never a throw (a request is data from a principal). Constant-time.
 */
export function seenTagVerifies(meshKey: string, sequence: number, tag: unknown): boolean {
  if (typeof tag !== "string" || !/^[A-Za-z0-9_-]{43}$/.test(tag)) return false;
  if (!Number.isSafeInteger(sequence) || sequence < 0) return false;
  const expected = Buffer.from(seenTag(meshKey, sequence), "base64url");
  const given = Buffer.from(tag, "base64url");
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** A node's key pair: X25519, public as base64 SPKI DER, private as base64 PKCS#8 DER. */
export function newNodeKeyPair(): { publicKey: string; privateKey: string } {
  const { publicKey, privateKey } = generateKeyPairSync("x25519");
  return {
    publicKey: publicKey.export({ type: "spki", format: "der" }).toString("base64"),
    privateKey: privateKey.export({ type: "pkcs8", format: "der" }).toString("base64"),
  };
}

/** True when `publicKey` is a base64 SPKI X25519 public key. */
export function isNodePublicKey(publicKey: string): boolean {
  try {
    return createPublicKey({ key: Buffer.from(publicKey, "base64"), format: "der", type: "spki" }).asymmetricKeyType === "x25519";
  } catch {
    return false;
  }
}

function transportKey(shared: Buffer, ephemeralPublic: Buffer): Buffer {
  return Buffer.from(hkdfSync("sha256", shared, ephemeralPublic, "mesh-controller sealed to node", 32));
}

/**
 * The sender's side of sealing: one X25519 key pair per process, and the transport key it agrees
 * with each node, kept (push seals for every node, and a key agreement plus parsing the node's key
 * cost about 1 ms, against microseconds for the AES-GCM seal itself). Each seal still gets its own
 * random IV; the output names the sender's public key, so openAsNode needs nothing else.
 */
const sender = generateKeyPairSync("x25519");
const senderPublic = sender.publicKey.export({ type: "spki", format: "der" });
const senderTag = senderPublic.toString("base64url");
const transportKeys = new Map<string, Buffer>();
const MAX_RECIPIENTS = 100_000;

/** The fixed DER prefix of an X25519 SubjectPublicKeyInfo: 12 bytes, then the 32-byte key. */
const X25519_SPKI_PREFIX = Buffer.from("302a300506032b656e032100", "hex");

/**
 * A node's public key (base64 SPKI DER) as a KeyObject. The usual X25519 form is imported as a JWK
 * of its 32 raw bytes: the same key, about ten times cheaper than OpenSSL's DER decoder, which
 * made most of a first push's cost at 1,000 nodes. Anything else goes through the DER decoder.
 */
export function nodePublicKey(publicKey: string): KeyObject {
  const der = Buffer.from(publicKey, "base64");
  if (der.length === 44 && der.subarray(0, 12).equals(X25519_SPKI_PREFIX)) {
    return createPublicKey({ key: { kty: "OKP", crv: "X25519", x: der.subarray(12).toString("base64url") }, format: "jwk" });
  }
  return createPublicKey({ key: der, format: "der", type: "spki" });
}

/** Seals a secret to a node's public key. Output: `<sender public key>~<iv.tag.body>`. */
export function sealToNode(publicKey: string, secret: string): string {
  let key = transportKeys.get(publicKey);
  if (!key) {
    const recipient = nodePublicKey(publicKey);
    key = transportKey(diffieHellman({ privateKey: sender.privateKey, publicKey: recipient }), senderPublic);
    if (transportKeys.size >= MAX_RECIPIENTS) transportKeys.clear();
    transportKeys.set(publicKey, key);
  }
  return `${senderTag}~${aeadSeal(key, secret)}`;
}

/** Opens a secret sealed to this node with its private key. Throws when it was sealed to another. */
export function openAsNode(privateKey: string, sealed: string): string {
  const [ephemeral, body] = sealed.split("~");
  if (!ephemeral || !body) throw new Error("sealed secret is malformed");
  const ephemeralPublic = Buffer.from(ephemeral, "base64url");
  const own = createPrivateKey({ key: Buffer.from(privateKey, "base64"), format: "der", type: "pkcs8" });
  const shared = diffieHellman({
    privateKey: own,
    publicKey: createPublicKey({ key: ephemeralPublic, format: "der", type: "spki" }),
  });
  return aeadOpen(transportKey(shared, ephemeralPublic), body);
}

/** Every certificate of a PEM bundle (a chain), each as its own PEM, in order. Pure. */
export function certificatesOf(bundle: string): string[] {
  return bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)?.map((pem) => `${pem}\n`) ?? [];
}

/** SHA-256 fingerprint of a PEM certificate, `AA:BB:...` upper-case (R34). */
export function certificateFingerprint(pem: string): string {
  return new X509Certificate(pem).fingerprint256;
}
