import { sign, type KeyObject } from "node:crypto";
import { fromSeed, type KeyPair } from "@nats-io/nkeys";
import { ed25519PrivateKey, ed25519PublicBytes, userPublicKey } from "../crypto/nkeyEncoding.ts";

export { userPublicKey };

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
  const key: KeyObject = ed25519PrivateKey(rawSeed);
  return {
    publicKey: userPublicKey(ed25519PublicBytes(key)),
    sign: (nonce) => sign(null, Buffer.from(nonce, "utf8"), key).toString("base64"),
  };
}
