/**
 * nkey encoding (the nats-io/nkeys format), with node:crypto's ed25519: the nkeys library derives
 * keys with a JavaScript ed25519 (measured here: ~10 ms a key pair), node's OpenSSL in
 * microseconds. A public key is base32(prefix byte, 32 raw bytes, CRC-16 little-endian); a seed is
 * base32(two prefix bytes, 32 raw seed bytes, CRC-16). The bus and nats.js read exactly this (a
 * unit test holds it to the library). Pure but for the key derivation; no secret is logged.
 */
import { createPrivateKey, createPublicKey, type KeyObject } from "node:crypto";

const BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
/** nkeys' prefix byte of a user's public key (`U...`). */
export const NKEY_PREFIX_USER = 20 << 3;
/** nkeys' prefix byte of a seed (`S...`). */
export const NKEY_PREFIX_SEED = 18 << 3;
/** PKCS#8 DER of an ed25519 private key up to its 32-byte seed (RFC 8410). */
const ED25519_PKCS8_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");

/** RFC 4648 base32 without padding, as nkeys writes keys. */
export function base32Encode(bytes: Uint8Array): string {
  let bits = 0;
  let value = 0;
  let out = "";
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) { out += BASE32[(value >>> (bits - 5)) & 31]; bits -= 5; }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out;
}

/** The bytes of unpadded base32 `text`. Throws on a character outside the alphabet. */
export function base32Decode(text: string): Buffer {
  let bits = 0;
  let value = 0;
  const out: number[] = [];
  for (const char of text) {
    const index = BASE32.indexOf(char);
    if (index < 0) throw new Error("not base32");
    value = (value << 5) | index;
    bits += 5;
    if (bits >= 8) { out.push((value >>> (bits - 8)) & 255); bits -= 8; }
  }
  return Buffer.from(out);
}

/** CRC-16/XMODEM (polynomial 0x1021, initial 0), the checksum nkeys appends to a key. */
export function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit += 1) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

/** `body` and its CRC-16 little-endian, in base32: an nkey's text. */
export function withChecksum(body: Uint8Array): string {
  const crc = crc16(body);
  return base32Encode(Buffer.concat([body, Buffer.from([crc & 255, crc >>> 8])]));
}

/** A user's nkey public key (`U...`) from its raw 32-byte ed25519 public key. Throws on another length. */
export function userPublicKey(raw: Uint8Array): string {
  if (raw.length !== 32) throw new Error(`an ed25519 public key has 32 bytes, not ${raw.length}`);
  return withChecksum(Buffer.concat([Buffer.from([NKEY_PREFIX_USER]), raw]));
}

/** The ed25519 private key of a raw 32-byte seed, for node:crypto's sign. */
export function ed25519PrivateKey(rawSeed: Uint8Array): KeyObject {
  return createPrivateKey({ key: Buffer.concat([ED25519_PKCS8_PREFIX, rawSeed]), format: "der", type: "pkcs8" });
}

/** The raw 32-byte ed25519 public key of a private key (the SPKI DER ends with it, RFC 8410). */
export function ed25519PublicBytes(key: KeyObject): Buffer {
  const spki = createPublicKey(key).export({ format: "der", type: "spki" });
  return spki.subarray(spki.length - 32);
}
