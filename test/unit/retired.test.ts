import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { gzipSync } from "node:zlib";
import { retiredKeyOf } from "../../src/projections/index.ts";
import { packState } from "../../src/projections/pack.ts";
import { canonicalJson } from "../../src/projections/canonical.ts";
import { STATE_SHAPE_VERSION, decodeSnapshot, encodeSnapshot } from "../../src/records/snapshots.ts";
import { GENESIS, GENESIS_ADDRESS, NOW, fakeSecret, nodeKeyOf, nodeNkeyOf, stateOf, type EventBody } from "../support/givenWhenThen.ts";

const w3: EventBody[] = [
  { type: "NodeEnrolled", node: "w3", publicKey: nodeKeyOf("w3") },
  { type: "CredentialMinted", principal: { kind: "node", name: "w3" }, user: "node-w3", nkey: nodeNkeyOf("w3"), address: GENESIS_ADDRESS },
];
const ann = (n: number, type: "CredentialMinted" | "CredentialRotated"): EventBody => ({
  type, principal: { kind: "operator", name: "ann" }, user: "operator-ann", nkey: fakeSecret(n).nkey, sealed: `s${n}`, address: GENESIS_ADDRESS,
});

describe("the retired keys' fold (projections/retired.ts)", () => {
  it("R66: a node's removal retires its nkey and its X25519 key, naming whose, why, when and the sequence", () => {
    const state = stateOf([GENESIS, ...w3, { type: "NodeRemoved", node: "w3" }]);
    const node = { kind: "node", name: "w3" };
    assert.deepEqual(retiredKeyOf(state.retired, nodeNkeyOf("w3")), { kind: "nkey", principal: node, why: "node-removed", at: NOW, sequence: 4 });
    assert.deepEqual(retiredKeyOf(state.retired, nodeKeyOf("w3")), { kind: "sealing", principal: node, why: "node-removed", at: NOW, sequence: 4 });
  });

  it("R66: a rotation retires the key it replaces (not the new one); a revocation retires the revoked key", () => {
    const state = stateOf([GENESIS, ann(1, "CredentialMinted"), ann(2, "CredentialRotated"), { type: "CredentialRevoked", principal: { kind: "operator", name: "ann" } }]);
    assert.equal(retiredKeyOf(state.retired, fakeSecret(1).nkey)?.why, "rotated");
    assert.equal(retiredKeyOf(state.retired, fakeSecret(2).nkey)?.why, "revoked");
  });

  it("R66: a first minting, and a rotation onto the key already held, retire nothing", () => {
    const state = stateOf([GENESIS, ...w3, ann(1, "CredentialMinted"), ann(1, "CredentialRotated")]);
    assert.deepEqual([...state.retired.values()], []);
  });

  it("R41 R46: the retired keys go through a snapshot unchanged; a snapshot written before them (shape 8, no `retired`) is ignored", async () => {
    const state = stateOf([GENESIS, ...w3, { type: "NodeRemoved", node: "w3" }]);
    const read = await decodeSnapshot(await encodeSnapshot(state));
    assert.equal(canonicalJson(packState(read.state!)), canonicalJson(packState(state)));
    assert.ok(STATE_SHAPE_VERSION >= 9, "the shape version moved when `retired` joined the state");
    const { retired: _retired, ...before } = JSON.parse(JSON.stringify(packState(state))) as Record<string, unknown>;
    for (const version of [8, STATE_SHAPE_VERSION]) {
      const old = await decodeSnapshot(gzipSync(JSON.stringify({ version, state: before })));
      assert.equal(old.state, null, `a body of shape ${version} without retired keys`);
    }
  });
});
