import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { given, GENESIS, GENESIS_ADDRESS, NODE_KEY, NODE_NKEY, FINGERPRINT, enrolment, enrolBody, nodeKeyOf, nodeNkeyOf, fakeSecret } from "../../support/givenWhenThen.ts";
import { BOOTSTRAP_NKEY } from "../../../src/genesis.ts";

describe("node.enrol", () => {
  it("R1 R7 R64: records the node and its credential for the genesis address with the node's own nkey, and no secret", () => {
    given(GENESIS)
      .when("node.enrol", enrolBody("alpha"))
      .then(
        [
          { type: "NodeEnrolled", node: "alpha", publicKey: NODE_KEY },
          { type: "CredentialMinted", principal: { kind: "node", name: "alpha" }, user: "node-alpha", nkey: NODE_NKEY, address: GENESIS_ADDRESS },
        ],
        { kind: "node", id: "alpha" },
      );
  });

  it("R8: a genesis address without a port gets the standard port", () => {
    const outcome = given({ ...GENESIS, genesisAddress: "tls://bus.example" } as typeof GENESIS).when("node.enrol", enrolBody("alpha"));
    assert.ok(outcome.decision.ok);
    const minted = outcome.decision.events.find((e) => e.type === "CredentialMinted");
    assert.equal(minted?.type === "CredentialMinted" && minted.address, "tls://bus.example:4222");
  });

  it("R3 R64: the reply names the node's key and carries no secret (the seed never left the node)", () => {
    const reply = given(GENESIS).when("node.enrol", enrolBody("alpha")).reply();
    assert.deepEqual(reply, {
      node: "alpha",
      credential: { address: GENESIS_ADDRESS, user: "node-alpha", nkey: NODE_NKEY, fingerprint: FINGERPRINT },
    });
    assert.doesNotMatch(JSON.stringify(reply), /sealed|seed|password/);
  });

  it("refuses a mesh without genesis (no-mesh)", () => {
    given().when("node.enrol", enrolBody("alpha")).refused("no-mesh");
  });

  it("refuses a second enrolment of a name (node-exists)", () => {
    given(GENESIS, ...enrolment("alpha")).when("node.enrol", enrolBody("alpha")).refused("node-exists", "node");
  });

  it("R3 R66: refuses a public key another enrolled node holds (key-in-use, field publicKey); a removed node's key stays refused (key-retired)", () => {
    given(GENESIS, ...enrolment("alpha")).when("node.enrol", enrolBody("beta")).refused("key-in-use", "publicKey");
    given(GENESIS, ...enrolment("alpha"), { type: "NodeRemoved", node: "alpha" })
      .when("node.enrol", enrolBody("beta"))
      .refused("key-retired", "publicKey");
  });

  it("R63 R64 R66: refuses an nkey any recorded credential holds (key-in-use, field nkey); a removed node's nkey stays refused (key-retired)", () => {
    given(GENESIS, ...enrolment("alpha"))
      .when("node.enrol", { node: "beta", publicKey: "QUJDRA==", nkey: NODE_NKEY })
      .refused("key-in-use", "nkey");
    given(GENESIS, { type: "CredentialMinted", principal: { kind: "operator", name: "ann" }, user: "operator-ann", nkey: fakeSecret(5).nkey, sealed: "s", address: GENESIS_ADDRESS })
      .when("node.enrol", { node: "beta", publicKey: NODE_KEY, nkey: fakeSecret(5).nkey })
      .refused("key-in-use", "nkey");
    given(GENESIS, ...enrolment("alpha"), { type: "NodeRemoved", node: "alpha" })
      .when("node.enrol", { node: "beta", publicKey: nodeKeyOf("beta"), nkey: NODE_NKEY })
      .refused("key-retired", "nkey");
  });

  it("R13 R63: refuses the genesis bootstrap key (key-in-use, field nkey) whoever holds it now: its seed is public in the source", () => {
    given(GENESIS).when("node.enrol", { node: "vm3", publicKey: NODE_KEY, nkey: BOOTSTRAP_NKEY }).refused("key-in-use", "nkey");
    const controllerOff = { type: "CredentialMinted", principal: { kind: "controller", name: "mesh-controller" }, user: "controller-mesh-controller", nkey: fakeSecret(3).nkey, sealed: "s", address: GENESIS_ADDRESS } as const;
    given(GENESIS, controllerOff).when("node.enrol", { node: "vm3", publicKey: NODE_KEY, nkey: BOOTSTRAP_NKEY }).refused("key-in-use", "nkey");
  });

  it("R66: accepts a name again after its node was removed, with new keys", () => {
    const fresh = { publicKey: nodeKeyOf("alpha, again"), nkey: nodeNkeyOf("alpha, again") };
    given(GENESIS, ...enrolment("alpha"), { type: "NodeRemoved", node: "alpha" })
      .when("node.enrol", { node: "alpha", ...fresh })
      .then([
        { type: "NodeEnrolled", node: "alpha", publicKey: fresh.publicKey },
        { type: "CredentialMinted", principal: { kind: "node", name: "alpha" }, user: "node-alpha", nkey: fresh.nkey, address: GENESIS_ADDRESS },
      ]);
  });

  it("refuses a key that is not base64, and an empty key (invalid-request, field publicKey)", () => {
    given(GENESIS).when("node.enrol", { ...enrolBody("alpha"), publicKey: "not a key!" }).refused("invalid-request", "publicKey");
    given(GENESIS).when("node.enrol", { ...enrolBody("alpha"), publicKey: "abc" }).refused("invalid-request", "publicKey");
    given(GENESIS).when("node.enrol", { ...enrolBody("alpha"), publicKey: "" }).refused("invalid-request", "publicKey");
  });

  it("R64: refuses a missing nkey, a seed in its place and a malformed one (invalid-request, field nkey)", () => {
    given(GENESIS).when("node.enrol", { node: "alpha", publicKey: NODE_KEY }).refused("invalid-request", "nkey");
    given(GENESIS).when("node.enrol", { ...enrolBody("alpha"), nkey: fakeSecret(1).seed }).refused("invalid-request", "nkey");
    given(GENESIS).when("node.enrol", { ...enrolBody("alpha"), nkey: "Uabc" }).refused("invalid-request", "nkey");
  });

  it("refuses a bad node name, a wrong type and an unknown field (invalid-request, naming the field)", () => {
    given(GENESIS).when("node.enrol", { ...enrolBody("alpha"), node: "Alpha_1" }).refused("invalid-request", "node");
    given(GENESIS).when("node.enrol", { ...enrolBody("alpha"), node: 7 }).refused("invalid-request", "node");
    given(GENESIS).when("node.enrol", { ...enrolBody("alpha"), role: "x" }).refused("invalid-request", "role");
    given(GENESIS).when("node.enrol", "alpha").refused("invalid-request");
  });

  it("R64: takes no fresh secret (the node's key is its own)", () => {
    const outcome = given(GENESIS).when("node.enrol", enrolBody("alpha"), {
      commandId: "c", actor: "operator-a", now: "2026-02-02T00:00:00.000Z", secrets: [],
    });
    assert.ok(outcome.decision.ok);
    assert.notEqual(nodeNkeyOf("alpha"), nodeNkeyOf("beta"));
  });
});
