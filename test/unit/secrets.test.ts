import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createPublicKey, generateKeyPairSync } from "node:crypto";
import { newNodeKeyPair, nodePublicKey, openAsNode, sealToNode } from "../../src/crypto/secrets.ts";

describe("sealing to nodes", () => {
  it("R64: the fast import of a node's public key gives the key OpenSSL's DER decoder gives, and seals open on that node alone", () => {
    for (let i = 0; i < 50; i += 1) {
      const node = newNodeKeyPair();
      const slow = createPublicKey({ key: Buffer.from(node.publicKey, "base64"), format: "der", type: "spki" });
      assert.deepEqual(nodePublicKey(node.publicKey).export({ format: "jwk" }), slow.export({ format: "jwk" }));
      const sealed = sealToNode(node.publicKey, `secret-${i}`);
      assert.equal(openAsNode(node.privateKey, sealed), `secret-${i}`);
      assert.throws(() => openAsNode(newNodeKeyPair().privateKey, sealed));
    }
  });

  it("R64: a public key that is not X25519 SPKI is refused as the DER decoder refuses it", () => {
    const ed = generateKeyPairSync("ed25519").publicKey.export({ type: "spki", format: "der" }).toString("base64");
    assert.equal(nodePublicKey(ed).asymmetricKeyType, "ed25519"); // same DER path: no silent X25519 reading
    assert.throws(() => sealToNode(ed, "secret"));
    assert.throws(() => nodePublicKey(Buffer.alloc(44, 1).toString("base64")));
  });
});

describe("nkey user keys (R63)", () => {
  it("R63: a key pair made with node's ed25519 is the one the nkeys library reads, and the library's seeds give the library's public keys here", async () => {
    const { fromSeed, fromPublic, createUser } = await import("@nats-io/nkeys");
    const { newUserKey, publicKeyOfSeed } = await import("../../src/crypto/secrets.ts");
    for (let i = 0; i < 5; i += 1) {
      const ours = newUserKey();
      assert.match(ours.seed, /^SU[A-Z2-7]{56}$/);
      assert.match(ours.publicKey, /^U[A-Z2-7]{55}$/);
      assert.equal(fromSeed(new TextEncoder().encode(ours.seed)).getPublicKey(), ours.publicKey);
      assert.equal(fromPublic(ours.publicKey).getPublicKey(), ours.publicKey, "the checksum holds");
      assert.equal(publicKeyOfSeed(ours.seed), ours.publicKey);
      const theirs = createUser();
      assert.equal(publicKeyOfSeed(new TextDecoder().decode(theirs.getSeed())), theirs.getPublicKey());
    }
  });

  it("R63: a seed with a wrong checksum or of another shape is refused", async () => {
    const { newUserKey, publicKeyOfSeed } = await import("../../src/crypto/secrets.ts");
    const { seed } = newUserKey();
    const altered = `${seed.slice(0, 10)}${seed[10] === "A" ? "B" : "A"}${seed.slice(11)}`;
    assert.throws(() => publicKeyOfSeed(altered), /checksum/);
    assert.throws(() => publicKeyOfSeed("SAAA"), /not an nkey user seed/);
  });
});

describe("the genesis key (R13, R63)", () => {
  it("R13: BOOTSTRAP_NKEY, written out in src/genesis.ts, is the public key of BOOTSTRAP_SEED", async () => {
    const { BOOTSTRAP_NKEY, BOOTSTRAP_SEED } = await import("../../src/genesis.ts");
    const { publicKeyOfSeed } = await import("../../src/crypto/secrets.ts");
    assert.equal(publicKeyOfSeed(BOOTSTRAP_SEED), BOOTSTRAP_NKEY);
  });
});
