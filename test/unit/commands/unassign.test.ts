import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { holdersOf } from "../../../src/projections/index.ts";
import { given, GENESIS, enrolment, registration, type EventBody } from "../../support/givenWhenThen.ts";

const broker = { name: "broker", version: "1", seats: { "mesh-broker": { protocol: "nats" } }, claims: ["mesh-broker"] };
const store = { name: "store", version: "1", seats: { "mesh-store": { protocol: "nats-kv" } }, claims: ["mesh-store"] };

describe("unassign", () => {
  it("R17: takes a module off a node, which stops holding its seats", () => {
    const outcome = given(GENESIS, ...enrolment("alpha"), ...enrolment("beta"), registration(broker), registration(store),
      { type: "ModuleAssigned", module: "broker", node: "beta" }, { type: "ModuleAssigned", module: "store", node: "alpha" })
      .when("unassign", { module: "store", node: "alpha" });
    outcome.then([{ type: "ModuleUnassigned", module: "store", node: "alpha" }], { kind: "module", id: "store" });
    assert.deepEqual(holdersOf(outcome.after(), "mesh-store"), []);
    assert.deepEqual(outcome.reply(), { module: "store", node: "alpha", nodes: [] });
  });

  it("R49: unassigning the last holder of mesh-broker is refused, naming the seat", () => {
    given(GENESIS, ...enrolment("alpha"), registration(broker), { type: "ModuleAssigned", module: "broker", node: "alpha" })
      .when("unassign", { module: "broker", node: "alpha" })
      .refused("last-broker-holder", "module");
  });

  it("R49: unassigning one of two holders of mesh-broker is accepted, and so is any module on a mesh that keeps its broker", () => {
    const two: EventBody[] = [
      GENESIS, ...enrolment("alpha"), ...enrolment("beta"), registration(broker),
      { type: "ModuleAssigned", module: "broker", node: "alpha" }, { type: "ModuleAssigned", module: "broker", node: "beta" },
    ];
    given(...two).when("unassign", { module: "broker", node: "alpha" }).then([{ type: "ModuleUnassigned", module: "broker", node: "alpha" }]);
    // A second module claiming mesh-broker on the same node keeps it held.
    const twin = { ...broker, name: "broker-twin", seats: {} };
    given(GENESIS, ...enrolment("alpha"), registration(broker), registration(twin),
      { type: "ModuleAssigned", module: "broker", node: "alpha" }, { type: "ModuleAssigned", module: "broker-twin", node: "alpha" })
      .when("unassign", { module: "broker", node: "alpha" })
      .then([{ type: "ModuleUnassigned", module: "broker", node: "alpha" }]);
  });

  it("a module not on that node is accepted unchanged, appending nothing, and the reply says where it is", () => {
    const outcome = given(GENESIS, ...enrolment("alpha"), ...enrolment("beta"), registration(broker), { type: "ModuleAssigned", module: "broker", node: "beta" })
      .when("unassign", { module: "broker", node: "alpha" });
    outcome.unchanged({ kind: "module", id: "broker" });
    assert.deepEqual(outcome.reply(), { module: "broker", node: "alpha", nodes: ["beta"] });
  });

  it("refuses an unknown module (unknown-module) and an unknown node (unknown-node) as assign does", () => {
    const unknownModule: EventBody[] = [GENESIS, ...enrolment("alpha")];
    given(...unknownModule).when("unassign", { module: "ghost", node: "alpha" }).refused("unknown-module", "module");
    assert.deepEqual(
      given(...unknownModule).when("unassign", { module: "ghost", node: "alpha" }).decision,
      given(...unknownModule).when("assign", { module: "ghost", node: "alpha" }).decision,
    );
    given(GENESIS).when("unassign", { module: "ghost", node: "nowhere" }).refused("unknown-module", "module");
    const unknownNode: EventBody[] = [GENESIS, registration(broker)];
    given(...unknownNode).when("unassign", { module: "broker", node: "nowhere" }).refused("unknown-node", "node");
    assert.deepEqual(
      given(...unknownNode).when("unassign", { module: "broker", node: "nowhere" }).decision,
      given(...unknownNode).when("assign", { module: "broker", node: "nowhere" }).decision,
    );
  });

  it("refuses a bad name (invalid-request)", () => {
    given(GENESIS).when("unassign", { module: "broker", node: "" }).refused("invalid-request", "node");
  });
});
