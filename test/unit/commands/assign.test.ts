import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { holdersOf } from "../../../src/projections/index.ts";
import { given, GENESIS, enrolment, registration } from "../../support/givenWhenThen.ts";

const broker = { name: "broker", version: "1", seats: { "mesh-broker": { protocol: "nats" } }, claims: ["mesh-broker"] };

describe("assign", () => {
  it("R17: assigns a module to a node, which becomes a holder of the seats it claims", () => {
    const outcome = given(GENESIS, ...enrolment("alpha"), registration(broker)).when("assign", { module: "broker", node: "alpha" });
    outcome.then([{ type: "ModuleAssigned", module: "broker", node: "alpha" }], { kind: "module", id: "broker" });
    assert.deepEqual(holdersOf(outcome.after(), "mesh-broker"), ["alpha"]);
    assert.deepEqual(outcome.reply(), { module: "broker", node: "alpha", nodes: ["alpha"] });
  });

  it("refuses an unknown module (unknown-module)", () => {
    given(GENESIS, ...enrolment("alpha")).when("assign", { module: "broker", node: "alpha" }).refused("unknown-module", "module");
  });

  it("refuses an unknown node (unknown-node)", () => {
    given(GENESIS, registration(broker)).when("assign", { module: "broker", node: "alpha" }).refused("unknown-node", "node");
  });

  it("a module already on that node is accepted unchanged, appending nothing, and the reply says where it is", () => {
    const outcome = given(GENESIS, ...enrolment("alpha"), registration(broker), { type: "ModuleAssigned", module: "broker", node: "alpha" })
      .when("assign", { module: "broker", node: "alpha" });
    outcome.unchanged({ kind: "module", id: "broker" });
    assert.deepEqual(outcome.reply(), { module: "broker", node: "alpha", nodes: ["alpha"] });
  });

  it("refuses a missing field (invalid-request)", () => {
    given(GENESIS).when("assign", { module: "broker" }).refused("invalid-request", "node");
  });
});
