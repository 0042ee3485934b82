import { newNodeKeyPair, newUserKey } from "../../src/crypto/secrets.ts";

/**
 * A `node.enrol` request body for `node` with fresh keys, as `mesh host init` would make them (R64):
 * `{ node, publicKey, nkey }`, the X25519 key secrets are sealed to and the nkey user's public key.
 * The private halves are thrown away: for tests and benches that only need the node on the records.
 */
export function enrolRequest(node: string): { node: string; publicKey: string; nkey: string } {
  return { node, publicKey: newNodeKeyPair().publicKey, nkey: newUserKey().publicKey };
}
