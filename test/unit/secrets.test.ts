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
