import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { evolve, holdersOf, brokerReachableAt, type State } from "../../src/projections/index.ts";
import { Manifest } from "../../src/manifest/manifest.ts";
import { stateOf, type EventBody } from "../support/givenWhenThen.ts";
import { canonicalJson } from "../../src/projections/canonical.ts";
import { packState } from "../../src/projections/pack.ts";

const meta = (n: number) => ({ actor: "operator-test", commandId: `c${n}`, at: "2026-01-01T00:00:00.000Z" });
const given = (...events: EventBody[]): State => stateOf(events);
const genesis = { type: "MeshCreated", genesisAddress: "tls://bus.example:4443", fingerprint: Array(32).fill("AB").join(":"), bootstrapUser: "controller-mesh-controller" } as const;
const broker = Manifest.parse({ name: "broker", version: "1", seats: { "mesh-broker": { protocol: "nats" } }, claims: ["mesh-broker"] });

describe("projections", () => {
  it("R17 R27: holders are read from assignments and follow seat aliases", () => {
    const state = given(
      genesis,
      { type: "ModuleRegistered", manifest: broker },
      { type: "ModuleAssigned", module: "broker", node: "alpha" },
      { type: "SeatAliased", from: "old-broker", to: "mesh-broker" },
    );
    assert.deepEqual(holdersOf(state, "mesh-broker"), ["alpha"]);
    assert.deepEqual(holdersOf(state, "old-broker"), ["alpha"]);
    assert.deepEqual(holdersOf(state, "nothing"), []);
  });

  it("R6 R7 R8: the broker's address is the genesis address off the overlay and the holder's overlay name on it", () => {
    const portless = given({ ...genesis, genesisAddress: "tls://bus.example" });
    assert.equal(brokerReachableAt(portless, "alpha"), "tls://bus.example:4222");
    const state = given(
      genesis,
      { type: "ModuleRegistered", manifest: broker },
      { type: "OverlayPlaced", node: "hub", hub: true, overlayName: "hub.internal" },
      { type: "OverlayPlaced", node: "alpha", hub: false, overlayName: "alpha.internal" },
    );
    assert.equal(brokerReachableAt(state, "alpha"), "tls://hub.internal:4443", "the hub stands in while nothing holds mesh-broker");
    assert.equal(brokerReachableAt(state, "beta"), "tls://bus.example:4443", "a node off the overlay gets the genesis address");
    const held = evolve(state, [{ sequence: 999, commit: { commandId: "z", entity: { kind: "test", id: "x" }, events: [{ ...meta(999), type: "ModuleAssigned", module: "broker", node: "alpha" }] } }]);
    assert.equal(brokerReachableAt(held, "hub"), "tls://alpha.internal:4443");
  });

  it("evolve is pure: the input state is left as it was", () => {
    const before = given(genesis);
    const copy = canonicalJson(packState(before));
    const after = evolve(before, [{ sequence: 50, commit: { commandId: "q", entity: { kind: "node", id: "a" }, events: [{ ...meta(50), type: "NodeEnrolled", node: "a", publicKey: "k" }] } }]);
    assert.equal(canonicalJson(packState(before)), copy);
    assert.notEqual(canonicalJson(packState(after)), copy, "the comparison sees the change");
  });
});
