import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { busUser } from "../../../src/names.ts";
import { given, GENESIS, GENESIS_ADDRESS, enrolment, fakeSecret, registration, type EventBody } from "../../support/givenWhenThen.ts";
import { credentialAt, nodeOf, provisionOf } from "../../../src/projections/index.ts";

describe("node.remove", () => {
  it("removes an enrolled node; its credential goes with it", () => {
    const outcome = given(GENESIS, ...enrolment("alpha")).when("node.remove", { node: "alpha" });
    outcome.then([{ type: "NodeRemoved", node: "alpha" }], { kind: "node", id: "alpha" });
    const after = outcome.after();
    assert.equal(nodeOf(after.nodes, "alpha"), undefined);
    assert.equal(credentialAt(after.credentials, "node:alpha"), undefined);
    assert.deepEqual(outcome.reply(), { node: "alpha", freshCredentials: [], freshProvisions: [] });
  });

  it("refuses a node that is not enrolled (unknown-node)", () => {
    given(GENESIS).when("node.remove", { node: "ghost" }).refused("unknown-node", "node");
    given(GENESIS, ...enrolment("alpha"), { type: "NodeRemoved", node: "alpha" }).when("node.remove", { node: "alpha" }).refused("unknown-node");
  });

  it("refuses a bad name (invalid-request)", () => {
    given(GENESIS).when("node.remove", { node: "-bad" }).refused("invalid-request", "node");
    given(GENESIS).when("node.remove", {}).refused("invalid-request", "node");
  });
});

const relay = { name: "relay", version: "1", seats: { relay: { protocol: "relay", emits: ["hop"] } }, claims: ["relay"] };
const broker = { name: "broker", version: "1", seats: { "mesh-broker": { protocol: "nats" } }, claims: ["mesh-broker"] };
const controllerModule = { name: "mesh-controller", version: "1", seats: { "the-controller": { protocol: "mesh-command" } }, claims: ["the-controller"] };
const issued = (module: string, n: number): EventBody[] => [
  { type: "ModuleIssued", module },
  { type: "CredentialMinted", principal: { kind: "module", name: module }, user: busUser("module", module), nkey: fakeSecret(n).nkey, sealed: `sealed-${n}`, address: GENESIS_ADDRESS },
];
const rotatedTo = (principal: { kind: "module" | "controller"; name: string }, n: number): EventBody => ({
  type: "CredentialRotated", principal, user: busUser(principal.kind, principal.name), nkey: fakeSecret(n).nkey, sealed: `sealed-${n}`, address: GENESIS_ADDRESS,
});
/** A mesh with a broker on hub, and relay issued and assigned to w2. */
const withRelay: EventBody[] = [
  GENESIS, ...enrolment("hub"), ...enrolment("w2"), registration(broker), ...issued("broker", 9),
  { type: "ModuleAssigned", module: "broker", node: "hub" },
  registration(relay), ...issued("relay", 10), { type: "ModuleAssigned", module: "relay", node: "w2" },
];

describe("node.remove: every credential delivered to the node ends with it (R48)", () => {
  it("R48: the credential of a module assigned there is replaced in the removal's own commit, and the reply names it", () => {
    const outcome = given(...withRelay).when("node.remove", { node: "w2" });
    outcome.then([{ type: "NodeRemoved", node: "w2" }, rotatedTo({ kind: "module", name: "relay" }, 1)], { kind: "node", id: "w2" });
    const after = outcome.after();
    assert.equal(credentialAt(after.credentials, "module:relay")?.nkey, fakeSecret(1).nkey, "the records hold the fresh credential only");
    assert.deepEqual(outcome.reply(), { node: "w2", freshCredentials: [{ kind: "module", name: "relay" }], freshProvisions: [] });
  });

  it("R48: a module that ran there and moved away since its credential was minted gets a fresh one too", () => {
    const moved: EventBody[] = [...withRelay, { type: "ModuleUnassigned", module: "relay", node: "w2" }, { type: "ModuleAssigned", module: "relay", node: "hub" }];
    given(...moved).when("node.remove", { node: "w2" })
      .then([{ type: "NodeRemoved", node: "w2" }, rotatedTo({ kind: "module", name: "relay" }, 1)]);
    // A handover moves modules the same way.
    const handedOver: EventBody[] = [
      ...withRelay,
      { type: "ModuleUnassigned", module: "relay", node: "w2" }, { type: "ModuleAssigned", module: "relay", node: "hub" },
      { type: "SeatHandedOver", seat: "relay", from: "w2", to: "hub" },
    ];
    given(...handedOver).when("node.remove", { node: "w2" })
      .then([{ type: "NodeRemoved", node: "w2" }, rotatedTo({ kind: "module", name: "relay" }, 1)]);
  });

  it("R48: a credential rotated after its module left the node never reached it and is kept", () => {
    given(...withRelay, { type: "ModuleUnassigned", module: "relay", node: "w2" }, rotatedTo({ kind: "module", name: "relay" }, 11))
      .when("node.remove", { node: "w2" })
      .then([{ type: "NodeRemoved", node: "w2" }]);
  });

  it("R48: the controller's credential is replaced when mesh-controller ran on the node", () => {
    const controller: EventBody[] = [
      { type: "CredentialMinted", principal: { kind: "controller", name: "mesh-controller" }, user: busUser("controller", "mesh-controller"), nkey: fakeSecret(12).nkey, sealed: "sealed-12", address: GENESIS_ADDRESS },
      registration(controllerModule), { type: "ModuleAssigned", module: "mesh-controller", node: "w2" },
    ];
    const outcome = given(...withRelay, ...controller).when("node.remove", { node: "w2" });
    outcome.then([
      { type: "NodeRemoved", node: "w2" },
      rotatedTo({ kind: "controller", name: "mesh-controller" }, 1),
      rotatedTo({ kind: "module", name: "relay" }, 2),
    ]);
    assert.deepEqual((outcome.reply() as { freshCredentials: unknown }).freshCredentials, [
      { kind: "controller", name: "mesh-controller" }, { kind: "module", name: "relay" },
    ]);
  });

  it("R48: a module assigned there but never issued has nothing to replace", () => {
    given(GENESIS, ...enrolment("w2"), registration(relay), { type: "ModuleAssigned", module: "relay", node: "w2" })
      .when("node.remove", { node: "w2" })
      .then([{ type: "NodeRemoved", node: "w2" }]);
  });
});

const store = { name: "store", version: "1", seats: { artifacts: { protocol: "s3", provides: "artifacts" } }, claims: ["artifacts"] };
const app = { name: "app", version: "1", uses: ["artifacts"] };
const minted: EventBody = { type: "ProvisionMinted", seat: "artifacts", provision: "artifacts", consumer: "app", user: "app", sealed: "sealed-p" };
const provisionRotated = (n: number): EventBody => ({ type: "ProvisionRotated", seat: "artifacts", provision: "artifacts", consumer: "app", user: "app", sealed: `sealed-${n}` });
/** withRelay plus store (the provider of artifacts) on p2 and app (its consumer) on w2, the provision minted. */
const withProvision: EventBody[] = [
  ...withRelay, ...enrolment("p2"),
  registration(store), ...issued("store", 20), { type: "ModuleAssigned", module: "store", node: "p2" },
  registration(app), ...issued("app", 21), { type: "ModuleAssigned", module: "app", node: "w2" },
  minted,
];

describe("node.remove: every provision delivered to the node ends with it (R48)", () => {
  it("R48: the consumer's node: its module's credential and the provision it received are replaced in the removal's own commit; the reply names both", () => {
    const outcome = given(...withProvision).when("node.remove", { node: "w2" });
    outcome.then([
      { type: "NodeRemoved", node: "w2" },
      rotatedTo({ kind: "module", name: "app" }, 1),
      rotatedTo({ kind: "module", name: "relay" }, 2),
      provisionRotated(3),
    ]);
    assert.equal(provisionOf(outcome.after().provisions, "artifacts", "artifacts", "app")?.sealed, "sealed-3", "the records hold the fresh secret only");
    assert.deepEqual((outcome.reply() as { freshProvisions: unknown }).freshProvisions, [{ seat: "artifacts", provision: "artifacts", consumer: "app" }]);
  });

  it("R48: the provider's node (it holds the seat, and grants the provision) gets the provision replaced too", () => {
    given(...withProvision).when("node.remove", { node: "p2" })
      .then([{ type: "NodeRemoved", node: "p2" }, rotatedTo({ kind: "module", name: "store" }, 1), provisionRotated(2)]);
  });

  it("R48: a consumer or a provider that ran there and moved away since the provision was minted leaves it replaced too; one replaced after it left is kept", () => {
    const moved: EventBody[] = [...withProvision, { type: "ModuleUnassigned", module: "app", node: "w2" }, { type: "ModuleAssigned", module: "app", node: "hub" }];
    given(...moved, rotatedTo({ kind: "module", name: "app" }, 30)).when("node.remove", { node: "w2" })
      .then([{ type: "NodeRemoved", node: "w2" }, rotatedTo({ kind: "module", name: "relay" }, 1), provisionRotated(2)]);
    const providerMoved: EventBody[] = [...withProvision, { type: "ModuleUnassigned", module: "store", node: "p2" }, { type: "ModuleAssigned", module: "store", node: "hub" }];
    given(...providerMoved).when("node.remove", { node: "p2" })
      .then([{ type: "NodeRemoved", node: "p2" }, rotatedTo({ kind: "module", name: "store" }, 1), provisionRotated(2)]);
    given(...moved, rotatedTo({ kind: "module", name: "app" }, 30), provisionRotated(31)).when("node.remove", { node: "w2" })
      .then([{ type: "NodeRemoved", node: "w2" }, rotatedTo({ kind: "module", name: "relay" }, 1)]);
  });

  it("R48: a node that never held either side leaves the provision alone", () => {
    given(...withProvision, ...enrolment("idle")).when("node.remove", { node: "idle" }).then([{ type: "NodeRemoved", node: "idle" }]);
  });
});

describe("node.remove: the mesh never loses its broker (R49)", () => {
  it("R49: removing the last holder of mesh-broker is refused, naming the seat; the records are unchanged", () => {
    given(...withRelay).when("node.remove", { node: "hub" }).refused("last-broker-holder", "node");
  });

  it("R49: removing one of two holders is accepted", () => {
    given(...withRelay, { type: "ModuleAssigned", module: "broker", node: "w2" }).when("node.remove", { node: "hub" })
      .then([{ type: "NodeRemoved", node: "hub" }, rotatedTo({ kind: "module", name: "broker" }, 1)]);
  });
});
