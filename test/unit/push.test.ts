import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { redactDeclaration, sealForNode } from "../../src/push/push.ts";
import type { Declaration } from "../../src/compose/declaration.ts";
import { newMeshKey, newNodeKeyPair, openAsNode, sealWithMeshKey } from "../../src/crypto/secrets.ts";

const meshKey = newMeshKey();
const secret = "module-password-never-printed";
const declaration = (): Declaration => ({
  node: "alpha",
  modules: [{
    module: "web", version: "1", run: {},
    credential: { address: "tls://bus:4222", user: "module-web", sealed: sealWithMeshKey(meshKey, secret), fingerprint: "AB" },
    env: { MESH_BROKER_ADDRESS: "tls://bus:4222", MESH_BROKER_CERTIFICATE: "AB", MESH_USER: "module-web" },
    provisions: [{ seat: "mesh-store", provision: "database", user: "web", sealed: sealWithMeshKey(meshKey, "db-secret") }],
  }],
  provisions: [],
  userList: `authorization { users = [ { user: "a", password: "$2a$06$${"x".repeat(53)}" } ] }`,
  digest: "d".repeat(64),
});

describe("push helpers", () => {
  it("R3: a dry run's declaration has every secret and every hash redacted", () => {
    const text = JSON.stringify(redactDeclaration(declaration()));
    assert.doesNotMatch(text, /\$2a\$06\$/);
    assert.doesNotMatch(text, /"sealed":"(?!\[redacted\])/);
    assert.match(text, /\[redacted\]/);
  });

  it("R3: secrets are re-sealed to the node's key; the digest and the mesh-key form are untouched", () => {
    const keys = newNodeKeyPair();
    const original = declaration();
    const cache = new Map<string, string>();
    const sent = sealForNode(original, keys.publicKey, meshKey, new Map(), cache);
    assert.equal(sent.digest, original.digest);
    assert.equal(openAsNode(keys.privateKey, sent.modules[0]!.credential.sealed), secret);
    assert.equal(openAsNode(keys.privateKey, sent.modules[0]!.provisions[0]!.sealed), "db-secret");
    assert.notEqual(sent.modules[0]!.credential.sealed, original.modules[0]!.credential.sealed);
    // A second push reuses the node-sealed form of an unchanged secret.
    const again = sealForNode(original, keys.publicKey, meshKey, new Map(), cache);
    assert.equal(again.modules[0]!.credential.sealed, sent.modules[0]!.credential.sealed);
    // Another node gets its own.
    const other = newNodeKeyPair();
    const theirs = sealForNode(original, other.publicKey, meshKey, new Map(), cache);
    assert.throws(() => openAsNode(keys.privateKey, theirs.modules[0]!.credential.sealed));
  });
});
