import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { holdersOf } from "../../../src/projections/index.ts";
import { given, GENESIS, enrolment, registration } from "../../support/givenWhenThen.ts";

const broker = { name: "broker", version: "1", seats: { "mesh-broker": { protocol: "nats" } }, claims: ["mesh-broker"] };

describe("unassign", () => {
  it("R17: takes a module off a node, which stops holding its seats", () => {
    const outcome = given(GENESIS, ...enrolment("alpha"), registration(broker), { type: "ModuleAssigned", module: "broker", node: "alpha" })
      .when("unassign", { module: "broker", node: "alpha" });
    outcome.then([{ type: "ModuleUnassigned", module: "broker", node: "alpha" }], { kind: "module", id: "broker" });
    assert.deepEqual(holdersOf(outcome.after(), "mesh-broker"), []);
    assert.deepEqual(outcome.reply(), { module: "broker", node: "alpha", nodes: [] });
  });

  it("refuses a module not on that node (not-assigned)", () => {
    given(GENESIS, ...enrolment("alpha"), registration(broker)).when("unassign", { module: "broker", node: "alpha" }).refused("not-assigned", "node");
    given(GENESIS).when("unassign", { module: "ghost", node: "nowhere" }).refused("not-assigned");
  });

  it("refuses a bad name (invalid-request)", () => {
    given(GENESIS).when("unassign", { module: "broker", node: "" }).refused("invalid-request", "node");
  });
});
