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

describe("the controller's records tag (R43)", () => {
  it("R43: a tag verifies for exactly the node, digest and records sequence it was made on, under the mesh key it was made with", async () => {
    const { newMeshKey, recordsTag, recordsTagVerifies } = await import("../../src/crypto/secrets.ts");
    const meshKey = newMeshKey();
    const fact = { node: "vm", digest: "d".repeat(64), recordsSequence: 46 };
    const tag = recordsTag(meshKey, fact);
    assert.match(tag, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(recordsTag(meshKey, fact), tag, "the same fact, the same tag (a restated report echoes it unchanged)");
    assert.equal(recordsTagVerifies(meshKey, fact, tag), true);
    // Every way of changing one part of the claim, or the key: none verifies.
    const others = [
      { ...fact, node: "evil" }, { ...fact, node: "vm2" }, { ...fact, node: "" },
      { ...fact, digest: "e".repeat(64) }, { ...fact, digest: "" },
      { ...fact, recordsSequence: 45 }, { ...fact, recordsSequence: 47 }, { ...fact, recordsSequence: 999999 }, { ...fact, recordsSequence: 0 },
      { ...fact, recordsSequence: -46 }, { ...fact, recordsSequence: 46.5 }, { ...fact, recordsSequence: Number.NaN },
      // No two facts share a text: a name running into the digest is another fact.
      { node: "v", digest: `m${"d".repeat(64)}`, recordsSequence: 46 },
    ];
    for (const other of others) assert.equal(recordsTagVerifies(meshKey, other, tag), false, JSON.stringify(other));
    assert.equal(recordsTagVerifies(newMeshKey(), fact, tag), false, "another mesh's key");
    for (const bad of [undefined, null, 12, "", "x", `${tag}A`, tag.slice(1), `${tag.slice(0, 10)}${tag[10] === "A" ? "B" : "A"}${tag.slice(11)}`, recordsTag(meshKey, { ...fact, node: "evil" })]) {
      assert.equal(recordsTagVerifies(meshKey, fact, bad), false, String(bad));
    }
  });

  it("R43: the tag's key is derived from the mesh key under its own label: a tag is no HMAC under the mesh key itself, and the mesh key still seals and opens as before", async () => {
    const { createHmac } = await import("node:crypto");
    const { newMeshKey, recordsTag, openWithMeshKey, sealWithMeshKey } = await import("../../src/crypto/secrets.ts");
    const meshKey = newMeshKey();
    const fact = { node: "vm", digest: "d", recordsSequence: 1 };
    const text = JSON.stringify(["mesh-controller records tag 1", fact.node, fact.digest, fact.recordsSequence]);
    assert.notEqual(recordsTag(meshKey, fact), createHmac("sha256", Buffer.from(meshKey, "base64")).update(text).digest("base64url"));
    assert.equal(openWithMeshKey(meshKey, sealWithMeshKey(meshKey, "secret")), "secret");
    assert.throws(() => recordsTag("c2hvcnQ=", fact), /32 bytes/);
  });
});
