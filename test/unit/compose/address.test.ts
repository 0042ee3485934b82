import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { commands } from "../../../src/commands/index.ts";
import { composeDeclaration } from "../../../src/compose/index.ts";
import { evolve, type State } from "../../../src/projections/index.ts";
import { DEFAULT_ENVELOPE, GENESIS, GENESIS_ADDRESS, NODE_KEY, stateOf } from "../../support/givenWhenThen.ts";
import { EXAMPLE_CONFIG } from "./exampleMesh.ts";

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
const manifest = (name: string) => JSON.parse(readFileSync(new URL(`../../../examples/${name}.json`, import.meta.url), "utf8")) as unknown;

/** Runs one command's decide on `state` and folds its commit: the state after it. */
function run(state: State, verb: string, request: Record<string, unknown>, sequence: number): State {
  const definition = commands[verb]!;
  const decision = definition.decide(state, definition.schema.parse(request), { ...DEFAULT_ENVELOPE, commandId: `c-${sequence}` });
  assert.ok(decision.ok, `${verb} was accepted: ${JSON.stringify(decision)}`);
  return evolve(state, [{ sequence, commit: { commandId: `c-${sequence}`, entity: decision.entity, events: decision.events } }]);
}

/** `steps` in order on a mesh with node `vm` enrolled: the address the broker module's declaration tells it to dial. */
function brokerAddressAfter(steps: ReadonlyArray<[string, Record<string, unknown>]>): { module: string | undefined; node: string | undefined } {
  let state = stateOf([GENESIS]);
  let sequence = 10;
  state = run(state, "node.enrol", { node: "vm", publicKey: NODE_KEY }, sequence++);
  state = run(state, "module.register", { manifest: manifest("broker") }, sequence++);
  for (const [verb, request] of steps) state = run(state, verb, request, sequence++);
  const composed = composeDeclaration(state, "vm", EXAMPLE_CONFIG, sha256);
  assert.ok(composed.ok, JSON.stringify(composed));
  return { module: composed.declaration.modules[0]?.credential.address, node: composed.declaration.self?.address };
}

describe("credential addresses do not depend on command order (R7)", () => {
  const issue: [string, Record<string, unknown>] = ["module.issue", { module: "broker" }];
  const assign: [string, Record<string, unknown>] = ["assign", { module: "broker", node: "vm" }];
  const place: [string, Record<string, unknown>] = ["overlay.place", { node: "vm", hub: true }];
  const orders = {
    "issue, assign, place": [issue, assign, place],
    "assign, issue, place": [assign, issue, place],
    "assign, place, issue": [assign, place, issue],
    "place, assign, issue": [place, assign, issue],
    "place, issue, assign": [place, issue, assign],
  };

  it("R7: a module dials the bus at the address its node dials, whichever order it was issued, assigned and its node placed", () => {
    const seen = Object.fromEntries(Object.entries(orders).map(([name, steps]) => [name, brokerAddressAfter(steps)]));
    for (const [name, { module, node }] of Object.entries(seen)) {
      assert.equal(module, node, `${name}: the module's address is its node's`);
      assert.equal(module, GENESIS_ADDRESS, `${name}: the node was enrolled off the overlay, so both dial the genesis address`);
    }
  });
});
