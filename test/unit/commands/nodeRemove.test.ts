import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { given, GENESIS, enrolment } from "../../support/givenWhenThen.ts";

describe("node.remove", () => {
  it("removes an enrolled node; its credential goes with it", () => {
    const outcome = given(GENESIS, ...enrolment("alpha")).when("node.remove", { node: "alpha" });
    outcome.then([{ type: "NodeRemoved", node: "alpha" }], { kind: "node", id: "alpha" });
    const after = outcome.after();
    assert.equal(after.nodes["alpha"], undefined);
    assert.equal(after.credentials["node:alpha"], undefined);
    assert.deepEqual(outcome.reply(), { node: "alpha" });
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
