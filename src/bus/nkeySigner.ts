import { createPrivateKey, createPublicKey, sign, type KeyObject } from "node:crypto";

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
 * The encodings are nkeys' (github.com/nats-io/nkeys): a seed is base32 (RFC 4648, no padding) of
 * two prefix bytes (`S` and the key's role, `U` for users), the 32-byte ed25519 seed and a CRC-16
 * (XMODEM, little-endian) of what precedes it; a public key is base32 of the role byte, the 32-byte
 * public key and its CRC-16. The signature is the ed25519 signature of the nonce's UTF-8 bytes,
 * base64 as nats.js sends it.
 */

const BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
/** nkeys' prefix bytes: a seed (`S`, 18 << 3) and a user (`U`, 20 << 3). */
const SEED_PREFIX = 18 << 3;
const USER_PREFIX = 20 << 3;
/** PKCS#8 DER of an ed25519 private key up to its 32-byte seed (RFC 8410). */
const PKCS8_ED25519 = Buffer.from("302e020100300506032b657004220420", "hex");

/** A seed that is not an nkey user seed (bad characters, length, prefix or checksum). No secret in the message. */
export class NkeySeedError extends Error {
  override readonly name = "NkeySeedError";
}

function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit += 1) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

function base32Decode(text: string): Uint8Array {
  const out: number[] = [];
  let bits = 0;
  let value = 0;
  for (const char of text) {
    const index = BASE32.indexOf(char);
    if (index < 0) throw new NkeySeedError("an nkey seed holds only base32 characters (A-Z, 2-7)");
    value = ((value << 5) | index) & 0xffff;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Uint8Array.from(out);
}

function base32Encode(bytes: Uint8Array): string {
  let out = "";
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = ((value << 8) | byte) & 0xffff;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out;
}

/** A seed opened once: its public key (`U...`) and a signer of nonces. */
export type NkeySigner = {
  /** The user's public key, as the bus's user list holds it. */
  publicKey: string;
  /** The base64 ed25519 signature of `nonce`'s UTF-8 bytes. */
  sign(nonce: string): string;
};

/**
 * Opens an nkey user seed (`SU...`) for signing. Throws NkeySeedError when it is not one (its
 * characters, length, role or checksum), never quoting it (R3).
 */
export function nkeySigner(seed: string): NkeySigner {
  const raw = base32Decode(seed);
  if (raw.length !== 36) throw new NkeySeedError("an nkey seed decodes to 36 bytes (prefix, 32-byte seed, checksum)");
  const body = raw.subarray(0, 34);
  if (crc16(body) !== (raw[34]! | (raw[35]! << 8))) throw new NkeySeedError("the nkey seed's checksum does not match: it was mistyped or cut");
  const kind = raw[0]! & 0xf8;
  const role = ((raw[0]! & 0x07) << 5) | ((raw[1]! & 0xf8) >> 3);
  if (kind !== SEED_PREFIX || role !== USER_PREFIX) throw new NkeySeedError("not an nkey user seed (it must start with SU)");
  const key: KeyObject = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519, raw.subarray(2, 34)]), format: "der", type: "pkcs8" });
  const spki = createPublicKey(key).export({ format: "der", type: "spki" });
  const payload = new Uint8Array(35);
  payload[0] = USER_PREFIX;
  payload.set(spki.subarray(spki.length - 32), 1);
  const crc = crc16(payload.subarray(0, 33));
  payload[33] = crc & 0xff;
  payload[34] = crc >> 8;
  return {
    publicKey: base32Encode(payload),
    sign: (nonce) => sign(null, Buffer.from(nonce, "utf8"), key).toString("base64"),
  };
}
