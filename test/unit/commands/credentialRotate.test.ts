import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { given, GENESIS, GENESIS_ADDRESS, FINGERPRINT, FAKE_TOOLS, DEFAULT_ENVELOPE, NODE_KEY, enrolment, registration, fakeSecret, type EventBody } from "../../support/givenWhenThen.ts";

const rotated = (kind: "node" | "module" | "operator" | "controller", name: string, address: string): EventBody => ({
  type: "CredentialRotated", principal: { kind, name }, user: `${kind}-${name}`, hash: fakeSecret(1).hash, sealed: "sealed-1", address,
});
const placed: EventBody[] = [
  { type: "OverlayPlaced", node: "hub", hub: true, overlayName: "hub.internal" },
  { type: "OverlayPlaced", node: "alpha", hub: false, overlayName: "alpha.internal" },
];

describe("credential.rotate", () => {
  it("R7 R10: rotates a node's credential onto the address it reaches the broker at now", () => {
    given(GENESIS, ...enrolment("hub", 1), ...enrolment("alpha", 2), ...placed)
      .when("credential.rotate", { kind: "node", name: "alpha" })
      .then([rotated("node", "alpha", "tls://hub.internal:4443")], { kind: "node", id: "alpha" });
  });

  it("R3: a node's reply carries the new password sealed to its key, never in the clear", () => {
    const reply = given(GENESIS, ...enrolment("alpha")).when("credential.rotate", { kind: "node", name: "alpha" }).reply();
    assert.deepEqual(reply, {
      principal: { kind: "node", name: "alpha" },
      credential: { address: GENESIS_ADDRESS, user: "node-alpha", fingerprint: FINGERPRINT, sealedPassword: FAKE_TOOLS.sealToNode(NODE_KEY, "opened(sealed-1)") },
    });
    assert.ok(!JSON.stringify(reply).includes("pw-1"));
  });

  it("rotates an issued module's credential", () => {
    const issued: EventBody[] = [
      registration({ name: "app", version: "1" }),
      { type: "ModuleIssued", module: "app" },
      { type: "CredentialMinted", principal: { kind: "module", name: "app" }, user: "module-app", hash: fakeSecret(9).hash, sealed: "sealed-9", address: GENESIS_ADDRESS },
    ];
    const outcome = given(GENESIS, ...issued).when("credential.rotate", { kind: "module", name: "app" });
    outcome.then([rotated("module", "app", GENESIS_ADDRESS)], { kind: "module", id: "app" });
    assert.equal((outcome.reply() as { credential: { sealedPassword?: string } }).credential.sealedPassword, undefined);
  });

  it("rotates an operator's credential at the genesis address", () => {
    given(GENESIS, { type: "CredentialMinted", principal: { kind: "operator", name: "alice" }, user: "operator-alice", hash: fakeSecret(9).hash, sealed: "sealed-9", address: GENESIS_ADDRESS })
      .when("credential.rotate", { kind: "operator", name: "alice" })
      .then([rotated("operator", "alice", GENESIS_ADDRESS)], { kind: "operator", id: "alice" });
  });

  it("R50: an operator rotating its own credential gets the new password in the reply, which goes to its own inbox alone (R33); another asker does not", () => {
    const alice: EventBody = { type: "CredentialMinted", principal: { kind: "operator", name: "alice" }, user: "operator-alice", hash: fakeSecret(9).hash, sealed: "sealed-9", address: GENESIS_ADDRESS };
    const own = given(GENESIS, alice).when("credential.rotate", { kind: "operator", name: "alice" }).reply() as { credential: { password?: string } };
    assert.equal(own.credential.password, FAKE_TOOLS.openSecret("sealed-1"));
    const other = given(GENESIS, alice).when("credential.rotate", { kind: "operator", name: "alice" }, { ...DEFAULT_ENVELOPE, actor: "operator-bob" })
      .reply() as { credential: { password?: string } };
    assert.equal(other.credential.password, undefined);
  });

  it("R7: the controller's credential follows the node holding the-controller; a builder's its own node", () => {
    const controller = { name: "mesh-controller", version: "1", seats: { "the-controller": { protocol: "mesh-command" } }, claims: ["the-controller"] };
    const minted = (kind: "controller" | "builder", name: string): EventBody => ({
      type: "CredentialMinted", principal: { kind, name }, user: `${kind}-${name}`, hash: fakeSecret(9).hash, sealed: "sealed-9", address: GENESIS_ADDRESS,
    });
    const mesh: EventBody[] = [
      GENESIS, ...enrolment("hub", 1), ...enrolment("alpha", 2), ...placed, registration(controller),
      { type: "ModuleAssigned", module: "mesh-controller", node: "alpha" }, minted("controller", "mesh-controller"), minted("builder", "alpha"), minted("builder", "elsewhere"),
    ];
    given(...mesh).when("credential.rotate", { kind: "controller", name: "mesh-controller" })
      .then([rotated("controller", "mesh-controller", "tls://hub.internal:4443")], { kind: "controller", id: "mesh-controller" });
    given(...mesh).when("credential.rotate", { kind: "builder", name: "alpha" }).then([{ ...rotated("node", "alpha", "tls://hub.internal:4443"), principal: { kind: "builder", name: "alpha" }, user: "builder-alpha" } as EventBody]);
    given(...mesh).when("credential.rotate", { kind: "builder", name: "elsewhere" }).then([{ ...rotated("node", "elsewhere", GENESIS_ADDRESS), principal: { kind: "builder", name: "elsewhere" }, user: "builder-elsewhere" } as EventBody]);
  });

  it("refuses a mesh without genesis (no-mesh)", () => {
    given().when("credential.rotate", { kind: "node", name: "alpha" }).refused("no-mesh");
  });

  it("refuses a node not enrolled and a module not registered (unknown-principal)", () => {
    given(GENESIS).when("credential.rotate", { kind: "node", name: "alpha" }).refused("unknown-principal", "name");
    given(GENESIS).when("credential.rotate", { kind: "module", name: "app" }).refused("unknown-principal", "name");
  });

  it("refuses a principal with no credential (no-credential)", () => {
    given(GENESIS, registration({ name: "app", version: "1" })).when("credential.rotate", { kind: "module", name: "app" }).refused("no-credential", "name");
    given(GENESIS).when("credential.rotate", { kind: "operator", name: "bob" }).refused("no-credential", "name");
    given(GENESIS, ...enrolment("alpha"), { type: "CredentialRevoked", principal: { kind: "node", name: "alpha" } })
      .when("credential.rotate", { kind: "node", name: "alpha" })
      .refused("no-credential", "name");
  });

  it("refuses an unknown principal kind (invalid-request)", () => {
    given(GENESIS).when("credential.rotate", { kind: "robot", name: "r2" }).refused("invalid-request", "kind");
  });
});
