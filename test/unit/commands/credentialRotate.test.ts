import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { given, GENESIS, GENESIS_ADDRESS, FINGERPRINT, FAKE_TOOLS, DEFAULT_ENVELOPE, enrolment, nodeNkeyOf, registration, fakeSecret, type EventBody } from "../../support/givenWhenThen.ts";
import { BOOTSTRAP_NKEY } from "../../../src/genesis.ts";

/** The key `mesh host rotate-key` printed on the node (R64). */
const NEW_KEY = nodeNkeyOf("alpha, rotated");

const rotated = (kind: "node" | "module" | "operator" | "controller", name: string, address: string): EventBody => ({
  type: "CredentialRotated", principal: { kind, name }, user: `${kind}-${name}`, nkey: fakeSecret(1).nkey, sealed: "sealed-1", address,
});
const placed: EventBody[] = [
  { type: "OverlayPlaced", node: "hub", hub: true, overlayName: "hub.internal" },
  { type: "OverlayPlaced", node: "alpha", hub: false, overlayName: "alpha.internal" },
];

describe("credential.rotate", () => {
  it("R7 R10 R64: rotates a node's credential onto the key its host generated, at the address it reaches the broker at now, with no secret", () => {
    given(GENESIS, ...enrolment("hub"), ...enrolment("alpha"), ...placed)
      .when("credential.rotate", { kind: "node", name: "alpha", nkey: NEW_KEY }, { ...DEFAULT_ENVELOPE, secrets: [] })
      .then([{ type: "CredentialRotated", principal: { kind: "node", name: "alpha" }, user: "node-alpha", nkey: NEW_KEY, address: "tls://hub.internal:4443" }], { kind: "node", id: "alpha" });
  });

  it("R3 R64: a node's reply names its new key and carries no secret", () => {
    const reply = given(GENESIS, ...enrolment("alpha")).when("credential.rotate", { kind: "node", name: "alpha", nkey: NEW_KEY }).reply();
    assert.deepEqual(reply, {
      principal: { kind: "node", name: "alpha" },
      credential: { address: GENESIS_ADDRESS, user: "node-alpha", nkey: NEW_KEY, fingerprint: FINGERPRINT },
    });
    assert.doesNotMatch(JSON.stringify(reply), /seed|sealed|password/);
  });

  it("R64: a node's rotation needs the key its host generated (nkey-required); no other kind takes one (nkey-not-accepted); a key in use is refused (key-in-use)", () => {
    given(GENESIS, ...enrolment("alpha")).when("credential.rotate", { kind: "node", name: "alpha" }).refused("nkey-required", "nkey");
    const alice: EventBody = { type: "CredentialMinted", principal: { kind: "operator", name: "alice" }, user: "operator-alice", nkey: fakeSecret(9).nkey, sealed: "sealed-9", address: GENESIS_ADDRESS };
    given(GENESIS, alice).when("credential.rotate", { kind: "operator", name: "alice", nkey: NEW_KEY }).refused("nkey-not-accepted", "nkey");
    given(GENESIS, ...enrolment("alpha")).when("credential.rotate", { kind: "node", name: "alpha", nkey: nodeNkeyOf("alpha") }).refused("key-in-use", "nkey");
    given(GENESIS, ...enrolment("alpha"), alice).when("credential.rotate", { kind: "node", name: "alpha", nkey: fakeSecret(9).nkey }).refused("key-in-use", "nkey");
    given(GENESIS, ...enrolment("alpha")).when("credential.rotate", { kind: "node", name: "alpha", nkey: fakeSecret(1).seed }).refused("invalid-request", "nkey");
  });

  it("R13 R63: a node is never rotated onto the genesis bootstrap key (key-in-use, field nkey): its seed is public in the source", () => {
    given(GENESIS, ...enrolment("alpha")).when("credential.rotate", { kind: "node", name: "alpha", nkey: BOOTSTRAP_NKEY }).refused("key-in-use", "nkey");
  });

  it("R73: rotates an issued module's credential with overlap (its old key stays admitted until its nodes report the new one); no other kind's rotation carries it", () => {
    const issued: EventBody[] = [
      registration({ name: "app", version: "1" }),
      { type: "ModuleIssued", module: "app" },
      { type: "CredentialMinted", principal: { kind: "module", name: "app" }, user: "module-app", nkey: fakeSecret(9).nkey, sealed: "sealed-9", address: GENESIS_ADDRESS },
    ];
    const outcome = given(GENESIS, ...issued).when("credential.rotate", { kind: "module", name: "app" });
    outcome.then([{ ...rotated("module", "app", GENESIS_ADDRESS), overlap: true } as EventBody], { kind: "module", id: "app" });
    assert.equal((outcome.reply() as { credential: { seed?: string } }).credential.seed, undefined, "a module's seed travels sealed in its node's declaration, not in a reply");
  });

  it("rotates an operator's credential at the genesis address", () => {
    given(GENESIS, { type: "CredentialMinted", principal: { kind: "operator", name: "alice" }, user: "operator-alice", nkey: fakeSecret(9).nkey, sealed: "sealed-9", address: GENESIS_ADDRESS })
      .when("credential.rotate", { kind: "operator", name: "alice" })
      .then([rotated("operator", "alice", GENESIS_ADDRESS)], { kind: "operator", id: "alice" });
  });

  it("R50: an operator rotating its own credential gets its new seed in the reply, which goes to its own inbox alone (R33); another asker does not", () => {
    const alice: EventBody = { type: "CredentialMinted", principal: { kind: "operator", name: "alice" }, user: "operator-alice", nkey: fakeSecret(9).nkey, sealed: "sealed-9", address: GENESIS_ADDRESS };
    const own = given(GENESIS, alice).when("credential.rotate", { kind: "operator", name: "alice" }).reply() as { credential: { seed?: string } };
    assert.equal(own.credential.seed, FAKE_TOOLS.openSecret("sealed-1"));
    const other = given(GENESIS, alice).when("credential.rotate", { kind: "operator", name: "alice" }, { ...DEFAULT_ENVELOPE, actor: "operator-bob" })
      .reply() as { credential: { seed?: string } };
    assert.equal(other.credential.seed, undefined);
  });

  it("R7: the controller's credential follows the node holding the-controller; a builder's its own node", () => {
    const controller = { name: "mesh-controller", version: "1", seats: { "the-controller": { protocol: "mesh-command" } }, claims: ["the-controller"] };
    const minted = (kind: "controller" | "builder", name: string): EventBody => ({
      type: "CredentialMinted", principal: { kind, name }, user: `${kind}-${name}`, nkey: fakeSecret(9).nkey, sealed: "sealed-9", address: GENESIS_ADDRESS,
    });
    const mesh: EventBody[] = [
      GENESIS, ...enrolment("hub"), ...enrolment("alpha"), ...placed, registration(controller),
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
    given(GENESIS).when("credential.rotate", { kind: "node", name: "alpha", nkey: NEW_KEY }).refused("unknown-principal", "name");
    given(GENESIS).when("credential.rotate", { kind: "module", name: "app" }).refused("unknown-principal", "name");
  });

  it("refuses a principal with no credential (no-credential)", () => {
    given(GENESIS, registration({ name: "app", version: "1" })).when("credential.rotate", { kind: "module", name: "app" }).refused("no-credential", "name");
    given(GENESIS).when("credential.rotate", { kind: "operator", name: "bob" }).refused("no-credential", "name");
    given(GENESIS, ...enrolment("alpha"), { type: "CredentialRevoked", principal: { kind: "node", name: "alpha" } })
      .when("credential.rotate", { kind: "node", name: "alpha", nkey: NEW_KEY })
      .refused("no-credential", "name");
  });

  it("refuses an unknown principal kind (invalid-request)", () => {
    given(GENESIS).when("credential.rotate", { kind: "robot", name: "r2" }).refused("invalid-request", "kind");
  });
});
