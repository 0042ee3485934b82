/**
 * The native nkey signer (src/bus/nkeySigner.ts, R63) against @nats-io/nkeys, the reference
 * encoding: the same public key and the same ed25519 signature for every seed tried, and a clear
 * refusal of anything that is not a user seed, without quoting it (R3).
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createAccount, createUser, fromPublic, fromSeed } from "@nats-io/nkeys";
import { nkeySigner, NkeySeedError, userPublicKey } from "../../../src/bus/nkeySigner.ts";

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

describe("nkeySigner (R63)", () => {
  it("R63: derives the public key nkeys derives from the same seed, for many seeds", () => {
    for (let i = 0; i < 64; i += 1) {
      const pair = createUser();
      assert.equal(nkeySigner(text(pair.getSeed())).publicKey, pair.getPublicKey());
    }
  });

  it("R63: encodes any 32 raw bytes as a public key nkeys accepts (U, CRC-16, base32), and refuses another length", () => {
    for (let i = 0; i < 16; i += 1) {
      const key = userPublicKey(new Uint8Array(32).map((_, k) => (k * 7 + i * 31) & 0xff));
      assert.match(key, /^U[A-Z2-7]{55}$/);
      assert.equal(fromPublic(key).getPublicKey(), key, "nkeys decodes it, checksum included");
    }
    assert.throws(() => userPublicKey(new Uint8Array(31)), /32 bytes/);
  });

  it("R63: signs a nonce with the signature nkeys makes (ed25519 is deterministic), which the public key verifies", () => {
    const pair = createUser();
    const signer = nkeySigner(text(pair.getSeed()));
    for (const nonce of ["", "n0nce", "Xk3_-9abcDEF0123456789", "ünïcödé"]) {
      const signature = Buffer.from(signer.sign(nonce), "base64");
      const bytes = new TextEncoder().encode(nonce);
      assert.deepEqual(new Uint8Array(signature), fromSeed(pair.getSeed()).sign(bytes));
      assert.ok(fromPublic(pair.getPublicKey()).verify(bytes, signature));
    }
  });

  it("R63: refuses what is not an nkey user seed, never quoting it", () => {
    const seed = text(createUser().getSeed());
    const flipped = `${seed.slice(0, 10)}${seed[10] === "A" ? "B" : "A"}${seed.slice(11)}`;
    const cases = [
      flipped, // checksum
      seed.slice(0, 40), // cut
      `${seed.slice(0, -1)}1`, // not base32
      text(createAccount().getSeed()), // an account seed, not a user's
    ];
    for (const bad of cases) {
      assert.throws(() => nkeySigner(bad), (error: unknown) => error instanceof NkeySeedError && !error.message.includes(bad));
    }
  });
});
