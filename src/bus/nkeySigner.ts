import { createPrivateKey, createPublicKey, sign, type KeyObject } from "node:crypto";
import { fromSeed, type KeyPair } from "@nats-io/nkeys";

/**
 * Signing the bus's nonce with an nkey user seed (R63) through node:crypto's native ed25519.
 *
 * Why not nats.js's own nkeyAuthenticator: it derives the key pair and signs with tweetnacl, in
 * JavaScript, twice per connect (once for the public key, once for the signature): measured here
 * 14 to 16 ms per signature on a loaded 2-core machine against 0.4 ms natively. A host dials a few
 * connections and would not notice; a fleet would: 10,000 agents' reconnects after a bus restart
 * queue their signatures behind each other, the bus's authorization timeout expires for some, and
 * nats.js gives a connection up after two authorization errors (`npm run bench -- fleet`).
 *
 * The seed's decoding stays nkeys' business (@nats-io/nkeys decodes and checks it); the public key
 * is derived natively too (nkeys derives it with tweetnacl: about 100 ms of CPU in a fresh process,
 * a third of a `mesh nodes`, issue 29) and encoded as nkeys encodes it (userPublicKey); the
 * signature is the ed25519 signature of the nonce's UTF-8 bytes, base64 as nats.js sends it.
 */

/** PKCS#8 DER of an ed25519 private key up to its 32-byte seed (RFC 8410). */
const PKCS8_ED25519 = Buffer.from("302e020100300506032b657004220420", "hex");

/** nkeys' prefix byte of a user's public key (`U...`). */
const USER_PREFIX = 20 << 3;
const BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/** CRC-16/XMODEM (polynomial 0x1021, initial 0), the checksum nkeys appends to a key. */
function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit += 1) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

/** RFC 4648 base32 without padding, as nkeys writes keys. */
function base32(bytes: Uint8Array): string {
  let out = "";
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return bits > 0 ? out + BASE32[(value << (5 - bits)) & 31] : out;
}

/**
 * A user's nkey public key (`U` and 55 base32 characters) from its raw 32-byte ed25519 public key:
 * the prefix byte, the key, their CRC-16 little-endian, in base32 (nkeys' encoding). Pure.
 */
export function userPublicKey(raw: Uint8Array): string {
  if (raw.length !== 32) throw new Error(`an ed25519 public key has 32 bytes, not ${raw.length}`);
  const body = new Uint8Array(35);
  body[0] = USER_PREFIX;
  body.set(raw, 1);
  const crc = crc16(body.subarray(0, 33));
  body[33] = crc & 0xff;
  body[34] = crc >> 8;
  return base32(body);
}

/** A seed that is not an nkey user seed (bad characters, length, prefix or checksum). No secret in the message. */
export class NkeySeedError extends Error {
  override readonly name = "NkeySeedError";
}

/** A seed opened once: its public key (`U...`) and a signer of nonces. */
export type NkeySigner = {
  /** The user's public key, as the bus's user list holds it. */
  publicKey: string;
  /** The base64 ed25519 signature of `nonce`'s UTF-8 bytes. */
  sign(nonce: string): string;
};

/**
 * Opens an nkey user seed (`SU...`) for signing: nkeys decodes and checks it and derives its
 * public key (once), node:crypto signs. Throws NkeySeedError when it is not one (its characters,
 * length, role or checksum), never quoting it (R3).
 */
export function nkeySigner(seed: string): NkeySigner {
  let rawSeed: Uint8Array;
  try {
    // fromSeed's pair is nkeys' KP, which also hands out the 32-byte seed it decoded and checked.
    const pair = fromSeed(new TextEncoder().encode(seed)) as KeyPair & { getRawSeed(): Uint8Array };
    rawSeed = pair.getRawSeed();
  } catch (error) {
    throw new NkeySeedError(`not an nkey seed: ${error instanceof Error ? error.message : "it does not decode"}`);
  }
  // A seed that decoded names its role in its second character: U for a user.
  if (!seed.startsWith("SU")) throw new NkeySeedError("not an nkey user seed (it must start with SU)");
  const key: KeyObject = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519, rawSeed]), format: "der", type: "pkcs8" });
  // The SPKI DER of an ed25519 key ends with its 32 raw bytes (RFC 8410).
  const spki = createPublicKey(key).export({ format: "der", type: "spki" });
  return {
    publicKey: userPublicKey(spki.subarray(spki.length - 32)),
    sign: (nonce) => sign(null, Buffer.from(nonce, "utf8"), key).toString("base64"),
  };
}
