import {
  randomBytes, createCipheriv, createDecipheriv, generateKeyPairSync, createPublicKey, createPrivateKey,
  diffieHellman, hkdfSync, X509Certificate, type KeyObject,
} from "node:crypto";
import bcrypt from "bcryptjs";

/**
 * The mesh's secrets, in the shell (never imported by decide, evolve or compose).
 *
 * - Passwords are 32 random bytes, base64url: long random strings, so a low bcrypt cost loses
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

/** SHA-256 fingerprint of a PEM certificate, `AA:BB:...` upper-case (R34). */
export function certificateFingerprint(pem: string): string {
  return new X509Certificate(pem).fingerprint256;
}
