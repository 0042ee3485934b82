import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { given, GENESIS, GENESIS_ADDRESS, FINGERPRINT, enrolment, registration, fakeSecret, type EventBody } from "../../support/givenWhenThen.ts";

const app = { name: "app", version: "1" };
const overlay: EventBody[] = [
  ...enrolment("hub"),
  { type: "OverlayPlaced", node: "hub", hub: true, overlayName: "hub.internal" },
  ...enrolment("alpha"),
  { type: "OverlayPlaced", node: "alpha", hub: false, overlayName: "alpha.internal" },
  ...enrolment("beta"),
];
const minted = (address: string): EventBody[] => [
  { type: "ModuleIssued", module: "app" },
  { type: "CredentialMinted", principal: { kind: "module", name: "app" }, user: "module-app", nkey: fakeSecret(1).nkey, sealed: "sealed-1", address },
];

describe("module.issue", () => {
  it("R1 R7: issues a registered module, minting its credential for the genesis address while it is unassigned", () => {
    given(GENESIS, registration(app)).when("module.issue", { module: "app" }).then(minted(GENESIS_ADDRESS), { kind: "module", id: "app" });
  });

  it("R7: a module whose nodes are all on the overlay gets the broker's overlay address", () => {
    given(GENESIS, ...overlay, registration(app), { type: "ModuleAssigned", module: "app", node: "alpha" })
      .when("module.issue", { module: "app" })
      .then(minted("tls://hub.internal:4443"));
  });

  it("R7: a module on nodes that reach the broker at different addresses gets the genesis address", () => {
    given(GENESIS, ...overlay, registration(app), { type: "ModuleAssigned", module: "app", node: "alpha" }, { type: "ModuleAssigned", module: "app", node: "beta" })
      .when("module.issue", { module: "app" })
      .then(minted(GENESIS_ADDRESS));
  });

  it("R3: the reply names user, address and fingerprint, never the password or hash", () => {
    const reply = given(GENESIS, registration(app)).when("module.issue", { module: "app" }).reply();
    assert.deepEqual(reply, { module: "app", credential: { address: GENESIS_ADDRESS, user: "module-app", fingerprint: FINGERPRINT } });
    assert.ok(!JSON.stringify(reply).includes("pw-1"));
  });

  it("refuses a mesh without genesis (no-mesh)", () => {
    given(registration(app)).when("module.issue", { module: "app" }).refused("no-mesh");
  });

  it("refuses a module not registered (unknown-module)", () => {
    given(GENESIS).when("module.issue", { module: "app" }).refused("unknown-module", "module");
  });

  it("refuses a second issue: rotation is credential.rotate (already-issued)", () => {
    given(GENESIS, registration(app), ...minted(GENESIS_ADDRESS)).when("module.issue", { module: "app" }).refused("already-issued", "module");
  });

  it("refuses a bad module name (invalid-request)", () => {
    given(GENESIS).when("module.issue", { module: "App!" }).refused("invalid-request", "module");
  });
});
