import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { whereEveryoneIs } from "../../../src/projections/index.ts";
import { given, GENESIS, GENESIS_ADDRESS, enrolment, type EventBody } from "../../support/givenWhenThen.ts";

const nodes: EventBody[] = [GENESIS, ...enrolment("hub"), ...enrolment("alpha")];
const hubPlaced: EventBody = { type: "OverlayPlaced", node: "hub", hub: true, overlayName: "hub.internal" };

describe("overlay.place", () => {
  it("places a node on the overlay under its overlay name", () => {
    const outcome = given(...nodes, hubPlaced).when("overlay.place", { node: "alpha" });
    outcome.then([{ type: "OverlayPlaced", node: "alpha", hub: false, overlayName: "alpha.internal" }], { kind: "node", id: "alpha" });
    assert.deepEqual(whereEveryoneIs(outcome.after().overlay), { hub: "hub.internal", alpha: "alpha.internal" });
  });

  it("R9: places the one hub", () => {
    given(...nodes).when("overlay.place", { node: "hub", hub: true }).then([hubPlaced]);
  });

  it("R9: promotes a placed node to hub while there is none", () => {
    given(...nodes, { type: "OverlayPlaced", node: "hub", hub: false, overlayName: "hub.internal" })
      .when("overlay.place", { node: "hub", hub: true })
      .then([hubPlaced]);
  });

  it("R9: refuses a second hub, naming the existing one (hub-exists)", () => {
    const outcome = given(...nodes, hubPlaced).when("overlay.place", { node: "alpha", hub: true });
    outcome.refused("hub-exists", "hub");
    assert.ok(!outcome.decision.ok && outcome.decision.refusal.message.includes('"hub"'), "the message names the hub");
  });

  it("R10: the reply says modules move at the next push, others keep their old address, and lists the ones minted for another", () => {
    const reply = given(...nodes, hubPlaced).when("overlay.place", { node: "alpha" }).reply() as {
      note: string; staleCredentials: Array<{ principal: { name: string }; address: string; addressNow: string }>;
    };
    assert.ok(reply.note.length > 0, "the reply carries its note on earlier credentials");
    // the hub stands in for the broker (R6) and dials the genesis address itself (R7): only alpha moves
    assert.deepEqual(
      reply.staleCredentials.map((c) => [c.principal.name, c.address, c.addressNow]),
      [["alpha", GENESIS_ADDRESS, "tls://hub.internal:4443"]],
    );
    assert.ok(!JSON.stringify(reply).includes("sealed-"), "no secret in the reply");
  });

  it("refuses a node that is not enrolled (unknown-node)", () => {
    given(...nodes).when("overlay.place", { node: "gamma" }).refused("unknown-node", "node");
  });

  it("placing a placed node again is accepted unchanged, appending nothing; so is the hub placed again as the hub", () => {
    const again = given(...nodes, hubPlaced, { type: "OverlayPlaced", node: "alpha", hub: false, overlayName: "alpha.internal" })
      .when("overlay.place", { node: "alpha" });
    again.unchanged({ kind: "node", id: "alpha" });
    const reply = again.reply() as { node: string; overlayName: string; hub: boolean };
    assert.deepEqual([reply.node, reply.overlayName, reply.hub], ["alpha", "alpha.internal", false]);
    const hub = given(...nodes, hubPlaced).when("overlay.place", { node: "hub", hub: true });
    hub.unchanged({ kind: "node", id: "hub" });
    assert.equal((hub.reply() as { hub: boolean }).hub, true);
    // The hub placed again without --hub stays the hub: nothing to change either.
    given(...nodes, hubPlaced).when("overlay.place", { node: "hub" }).unchanged();
  });

  it("refuses a hub flag that is not a boolean (invalid-request)", () => {
    given(...nodes).when("overlay.place", { node: "alpha", hub: "yes" }).refused("invalid-request", "hub");
  });
});
