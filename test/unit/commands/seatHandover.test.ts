import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { handoversOf, holdersOf } from "../../../src/projections/index.ts";
import { given, GENESIS, enrolment, registration, type EventBody } from "../../support/givenWhenThen.ts";

const broker = { name: "broker", version: "1", seats: { "mesh-broker": { protocol: "nats" } }, claims: ["mesh-broker"] };
const mesh: EventBody[] = [
  GENESIS, ...enrolment("alpha"), ...enrolment("beta"), registration(broker),
  { type: "ModuleAssigned", module: "broker", node: "alpha" },
];

describe("seat.handover", () => {
  it("R17: moves the claimant and records the handover in one commit; holders are read from assignments", () => {
    const outcome = given(...mesh).when("seat.handover", { seat: "mesh-broker", from: "alpha", to: "beta" });
    outcome.then(
      [
        { type: "ModuleUnassigned", module: "broker", node: "alpha" },
        { type: "ModuleAssigned", module: "broker", node: "beta" },
        { type: "SeatHandedOver", seat: "mesh-broker", from: "alpha", to: "beta" },
      ],
      { kind: "seat", id: "mesh-broker" },
    );
    const after = outcome.after();
    assert.deepEqual(holdersOf(after, "mesh-broker"), ["beta"]);
    assert.equal(handoversOf(after.assignments, "mesh-broker").length, 1);
    assert.deepEqual(outcome.reply(), { seat: "mesh-broker", from: "alpha", to: "beta", modulesMoved: ["broker"], holders: ["beta"] });
  });

  it("R17 R27: a handover named by an old seat name records the current seat", () => {
    given(...mesh, { type: "SeatAliased", from: "bus", to: "mesh-broker" })
      .when("seat.handover", { seat: "bus", from: "alpha", to: "beta" })
      .then([
        { type: "ModuleUnassigned", module: "broker", node: "alpha" },
        { type: "ModuleAssigned", module: "broker", node: "beta" },
        { type: "SeatHandedOver", seat: "mesh-broker", from: "alpha", to: "beta" },
      ]);
  });

  it("R49: a handover never leaves mesh-broker without a holder: the claimant moves with it", () => {
    const outcome = given(...mesh).when("seat.handover", { seat: "mesh-broker", from: "alpha", to: "beta" });
    assert.deepEqual(holdersOf(outcome.after(), "mesh-broker"), ["beta"]);
    // Handing over another seat that the broker module also claims moves the broker too, and keeps it held.
    const both = { ...broker, version: "2", seats: { ...broker.seats, relay: { protocol: "relay" } }, claims: ["mesh-broker", "relay"] };
    const moved = given(...mesh, registration(both)).when("seat.handover", { seat: "relay", from: "alpha", to: "beta" });
    assert.deepEqual(holdersOf(moved.after(), "mesh-broker"), ["beta"]);
  });

  it("refuses a seat that does not exist (unknown-seat)", () => {
    given(...mesh).when("seat.handover", { seat: "mesh-store", from: "alpha", to: "beta" }).refused("unknown-seat", "seat");
  });

  it("refuses a target node that is not enrolled (unknown-node)", () => {
    given(...mesh).when("seat.handover", { seat: "mesh-broker", from: "alpha", to: "gamma" }).refused("unknown-node", "to");
  });

  it("refuses a from node that does not hold the seat, when to does not hold it either (not-holder)", () => {
    given(...mesh, ...enrolment("gamma")).when("seat.handover", { seat: "mesh-broker", from: "beta", to: "gamma" }).refused("not-holder", "from");
  });

  it("a handover already made (to holds the seat, from does not) is accepted unchanged, appending nothing", () => {
    const outcome = given(...mesh, { type: "ModuleUnassigned", module: "broker", node: "alpha" }, { type: "ModuleAssigned", module: "broker", node: "beta" })
      .when("seat.handover", { seat: "mesh-broker", from: "alpha", to: "beta" });
    outcome.unchanged({ kind: "seat", id: "mesh-broker" });
    assert.deepEqual(outcome.reply(), { seat: "mesh-broker", from: "alpha", to: "beta", modulesMoved: [], holders: ["beta"] });
  });

  it("refuses a target that already holds the seat while from holds it too (already-holder)", () => {
    given(...mesh, { type: "ModuleAssigned", module: "broker", node: "beta" })
      .when("seat.handover", { seat: "mesh-broker", from: "alpha", to: "beta" })
      .refused("already-holder", "to");
  });

  it("refuses a missing field (invalid-request)", () => {
    given(...mesh).when("seat.handover", { seat: "mesh-broker", from: "alpha" }).refused("invalid-request", "to");
  });
});
