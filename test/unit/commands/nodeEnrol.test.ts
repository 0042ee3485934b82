import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { given, GENESIS, GENESIS_ADDRESS, NODE_KEY, FINGERPRINT, FAKE_TOOLS, enrolment, fakeSecret } from "../../support/givenWhenThen.ts";

describe("node.enrol", () => {
  it("R1 R7: records the node and mints its credential for the genesis address, from the envelope's secret", () => {
    given(GENESIS)
      .when("node.enrol", { node: "alpha", publicKey: NODE_KEY })
      .then(
        [
          { type: "NodeEnrolled", node: "alpha", publicKey: NODE_KEY },
          { type: "CredentialMinted", principal: { kind: "node", name: "alpha" }, user: "node-alpha", hash: fakeSecret(1).hash, sealed: "sealed-1", address: GENESIS_ADDRESS },
        ],
        { kind: "node", id: "alpha" },
      );
  });

  it("R8: a genesis address without a port gets the standard port", () => {
    const outcome = given({ ...GENESIS, genesisAddress: "tls://bus.example" } as typeof GENESIS).when("node.enrol", { node: "alpha", publicKey: NODE_KEY });
    assert.ok(outcome.decision.ok);
    const minted = outcome.decision.events.find((e) => e.type === "CredentialMinted");
    assert.equal(minted?.type === "CredentialMinted" && minted.address, "tls://bus.example:4222");
  });

  it("R3 R33: the reply carries the password sealed to the node's key, never in the clear", () => {
    const reply = given(GENESIS).when("node.enrol", { node: "alpha", publicKey: NODE_KEY }).reply();
    assert.deepEqual(reply, {
      node: "alpha",
      credential: {
        address: GENESIS_ADDRESS,
        user: "node-alpha",
        sealedPassword: FAKE_TOOLS.sealToNode(NODE_KEY, FAKE_TOOLS.openSecret("sealed-1")),
        fingerprint: FINGERPRINT,
      },
    });
    const text = JSON.stringify(reply);
    assert.ok(!text.includes("pw-1"), "no password in the clear");
    assert.ok(!text.includes(fakeSecret(1).hash), "no hash");
  });

  it("refuses a mesh without genesis (no-mesh)", () => {
    given().when("node.enrol", { node: "alpha", publicKey: NODE_KEY }).refused("no-mesh");
  });

  it("refuses a second enrolment of a name (node-exists)", () => {
    given(GENESIS, ...enrolment("alpha")).when("node.enrol", { node: "alpha", publicKey: NODE_KEY }).refused("node-exists", "node");
  });

  it("R3: refuses a public key another enrolled node holds (key-in-use, field publicKey); a removed node's key is free again", () => {
    given(GENESIS, ...enrolment("alpha")).when("node.enrol", { node: "beta", publicKey: NODE_KEY }).refused("key-in-use", "publicKey");
    given(GENESIS, ...enrolment("alpha"), { type: "NodeRemoved", node: "alpha" })
      .when("node.enrol", { node: "beta", publicKey: NODE_KEY })
      .then(enrolment("beta"));
  });

  it("accepts a name again after its node was removed", () => {
    given(GENESIS, ...enrolment("alpha"), { type: "NodeRemoved", node: "alpha" })
      .when("node.enrol", { node: "alpha", publicKey: NODE_KEY })
      .then(enrolment("alpha"));
  });

  it("refuses a key that is not base64, and an empty key (invalid-request, field publicKey)", () => {
    given(GENESIS).when("node.enrol", { node: "alpha", publicKey: "not a key!" }).refused("invalid-request", "publicKey");
    given(GENESIS).when("node.enrol", { node: "alpha", publicKey: "abc" }).refused("invalid-request", "publicKey");
    given(GENESIS).when("node.enrol", { node: "alpha", publicKey: "" }).refused("invalid-request", "publicKey");
  });

  it("refuses a bad node name, a wrong type and an unknown field (invalid-request, naming the field)", () => {
    given(GENESIS).when("node.enrol", { node: "Alpha_1", publicKey: NODE_KEY }).refused("invalid-request", "node");
    given(GENESIS).when("node.enrol", { node: 7, publicKey: NODE_KEY }).refused("invalid-request", "node");
    given(GENESIS).when("node.enrol", { node: "alpha", publicKey: NODE_KEY, role: "x" }).refused("invalid-request", "role");
    given(GENESIS).when("node.enrol", "alpha").refused("invalid-request");
  });

  it("takes exactly one fresh secret", () => {
    const outcome = given(GENESIS).when("node.enrol", { node: "alpha", publicKey: NODE_KEY }, {
      commandId: "c", actor: "operator-a", now: "2026-02-02T00:00:00.000Z", secrets: [fakeSecret(7)],
    });
    assert.ok(outcome.decision.ok);
    assert.throws(() => given(GENESIS).when("node.enrol", { node: "alpha", publicKey: NODE_KEY }, {
      commandId: "c", actor: "operator-a", now: "2026-02-02T00:00:00.000Z", secrets: [],
    }), /needs fresh secret #1/);
  });
});
