import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { holdersOf, resolveSeat } from "../../../src/projections/index.ts";
import { given, GENESIS, enrolment, registration, type EventBody } from "../../support/givenWhenThen.ts";

const build1 = { name: "builder", version: "1", seats: { "mesh-build": { protocol: "mesh-work", accepts: ["build"] } }, claims: ["mesh-build"] };
// Version 2 renames its seat: the old name should resolve to the new one.
const build2 = { name: "builder", version: "2", seats: { "mesh-builds": { protocol: "mesh-work", accepts: ["build"] } }, claims: ["mesh-builds"] };
const renamed: EventBody[] = [GENESIS, registration(build1), registration(build2)];

describe("seat.alias", () => {
  it("R27: records a rename as a row; lookups of the old name resolve to the new seat", () => {
    const outcome = given(...renamed, ...enrolment("alpha"), { type: "ModuleAssigned", module: "builder", node: "alpha" })
      .when("seat.alias", { from: "mesh-build", to: "mesh-builds" });
    outcome.then([{ type: "SeatAliased", from: "mesh-build", to: "mesh-builds" }], { kind: "seat", id: "mesh-build" });
    const after = outcome.after();
    assert.equal(resolveSeat(after.modules, "mesh-build"), "mesh-builds");
    assert.deepEqual(holdersOf(after, "mesh-build"), ["alpha"]);
    assert.deepEqual(outcome.reply(), { from: "mesh-build", to: "mesh-builds", resolvesTo: "mesh-builds" });
  });

  it("R27: the same alias again is accepted unchanged, appending nothing, and the reply says where it resolves", () => {
    const outcome = given(...renamed, { type: "SeatAliased", from: "mesh-build", to: "mesh-builds" }).when("seat.alias", { from: "mesh-build", to: "mesh-builds" });
    outcome.unchanged({ kind: "seat", id: "mesh-build" });
    assert.deepEqual(outcome.reply(), { from: "mesh-build", to: "mesh-builds", resolvesTo: "mesh-builds" });
  });

  it("R27: an alias may point at another alias; lookups follow the chain", () => {
    const outcome = given(...renamed, { type: "SeatAliased", from: "builds", to: "mesh-builds" }).when("seat.alias", { from: "mesh-build", to: "builds" });
    outcome.then([{ type: "SeatAliased", from: "mesh-build", to: "builds" }]);
    assert.equal(resolveSeat(outcome.after().modules, "mesh-build"), "mesh-builds");
  });

  it("R27: refuses an alias that would make a cycle (alias-cycle)", () => {
    // builds → mesh-build; mesh-build is no seat any more, so aliasing it back to builds closes a loop.
    given(...renamed, { type: "SeatAliased", from: "builds", to: "mesh-build" })
      .when("seat.alias", { from: "mesh-build", to: "builds" })
      .refused("alias-cycle", "to");
    given(...renamed).when("seat.alias", { from: "ghost", to: "ghost" }).refused("alias-cycle", "to");
  });

  it("R27: refuses an alias onto a seat that does not exist (unknown-seat)", () => {
    given(...renamed).when("seat.alias", { from: "mesh-build", to: "nowhere" }).refused("unknown-seat", "to");
  });

  it("R27: refuses an alias from the name of a current seat (seat-exists)", () => {
    given(GENESIS, registration(build1), registration({ ...build2, name: "other" })).when("seat.alias", { from: "mesh-build", to: "mesh-builds" }).refused("seat-exists", "from");
  });

  it("refuses a bad seat name (invalid-request)", () => {
    given(...renamed).when("seat.alias", { from: "Mesh Build", to: "mesh-builds" }).refused("invalid-request", "from");
  });
});
