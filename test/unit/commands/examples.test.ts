import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { declaredSeat, holdersOf, moduleOf, type State } from "../../../src/projections/index.ts";
import { given, givenState, GENESIS } from "../../support/givenWhenThen.ts";

const examples = new URL("../../../examples/", import.meta.url);
/** The registration order examples/README.md gives. */
const ORDER = ["broker", "store", "builder", "packet-filter", "git", "npm", "artifacts", "showcase", "greeter"];
const manifestOf = (name: string): unknown => JSON.parse(readFileSync(new URL(`${name}.json`, examples), "utf8"));

describe("example mesh", () => {
  it("lists every example manifest in the registration order", () => {
    const files = readdirSync(examples).filter((f) => f.endsWith(".json")).map((f) => f.slice(0, -5)).sort();
    assert.deepEqual(files, [...ORDER].sort());
  });

  it("R23 R24 R25 R26: every example registers cleanly, in order", () => {
    let state: State = given(GENESIS).state;
    for (const name of ORDER) {
      const outcome = givenState(state).when("module.register", { manifest: manifestOf(name) }, {
        commandId: `register-${name}`, actor: "operator-alice", now: "2026-01-01T00:00:00.000Z", secrets: [],
      });
      assert.ok(outcome.decision.ok, `${name}: ${outcome.decision.ok ? "" : outcome.decision.refusal.message}`);
      state = outcome.after();
    }
    const seat = (name: string) => declaredSeat(state.modules, name);
    assert.equal(seat("mesh-broker")?.protocol, "nats");
    assert.equal(seat("mesh-store")?.protocol, "postgres");
    assert.deepEqual([seat("mesh-build")?.accepts, seat("mesh-build")?.emits], [["build"], ["built"]]);
    assert.deepEqual([seat("packet-filter")?.protocol, seat("packet-filter")?.scope], ["", "node"]);
    for (const shared of ["git", "npm", "artifacts"]) assert.equal(seat(shared)?.provides, shared, `R26: ${shared}`);
    const showcase = moduleOf(state.modules, "showcase")!.manifest;
    assert.deepEqual(showcase.uses, ["mesh-build", "artifacts"]);
    assert.deepEqual(showcase.follows, [{ seat: "mesh-build", event: "built" }]);
    assert.deepEqual(showcase.tools.map((t) => t.name), ["hello"]);
    assert.deepEqual(holdersOf(state, "mesh-broker"), []);
    const greeter = moduleOf(state.modules, "greeter")!.manifest;
    assert.deepEqual([seat("greetings")?.accepts, seat("greetings")?.emits, greeter.tools.map((t) => t.name)], [["greet"], ["greeted"], ["greet"]]);
    assert.deepEqual(greeter.run.command, ["mesh-greeter"]);
  });

  it("R25: the showcase alone, before the modules it uses, is refused", () => {
    given(GENESIS).when("module.register", { manifest: manifestOf("showcase") }).refused("unknown-seat");
  });
});
