/**
 * The broker's address (R6 to R10) told as one story of records, through the commands an operator
 * runs (given/when/then, no server). test/unit/projections.test.ts pins brokerReachableAt on hand-made
 * states and test/unit/commands/overlayPlace.test.ts each overlay.place refusal on its own; this
 * follows one mesh from genesis and checks, at every step, where each node reaches the broker and
 * which address each credential path (node enrol, credential rotate, module issue) mints.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { MeshEvent } from "../../src/events/index.ts";
import { brokerNode, brokerReachableAt, everyCredential, type State } from "../../src/projections/index.ts";
import { composeDeclaration } from "../../src/compose/index.ts";
import {
  GENESIS, GENESIS_ADDRESS, nodeKeyOf, nodeNkeyOf, given, givenState, registration, type EventBody, type Outcome, type Scenario,
} from "../support/givenWhenThen.ts";

/** Genesis with an address that names no port (R8): every address below carries 4222. */
const PORTLESS_GENESIS: EventBody = { ...GENESIS, genesisAddress: "tls://bus.example" } as EventBody;
const GENESIS_4222 = "tls://bus.example:4222";
const broker = { name: "broker", version: "2.9.10", seats: { "mesh-broker": { protocol: "nats" } }, claims: ["mesh-broker"] };

/** The address of the one credential event an accepted command decided. */
function mintedAddress(outcome: Outcome): string {
  assert.ok(outcome.decision.ok, outcome.decision.ok ? "" : `refused ${outcome.decision.refusal.code}`);
  const credential = outcome.decision.events.filter((e: MeshEvent) => e.type === "CredentialMinted" || e.type === "CredentialRotated");
  assert.equal(credential.length, 1, "one credential event");
  const event = credential[0]!;
  assert.ok(event.type === "CredentialMinted" || event.type === "CredentialRotated");
  return event.address;
}

/** Continues the story from an accepted command. */
function next(outcome: Outcome): Scenario {
  return givenState(outcome.after());
}

/** Where each node reaches the broker now (R7). */
function reach(state: State, nodes: readonly string[]): Record<string, string> {
  return Object.fromEntries(nodes.map((node) => [node, brokerReachableAt(state, node)]));
}

/** Recorded credential addresses by user. */
function recorded(state: State): Record<string, string> {
  return Object.fromEntries(everyCredential(state.credentials).map((c) => [c.user, c.address]));
}

type StaleList = Array<{ user: string; address: string; addressNow: string }>;

/** Runs the commands in order, each on the state the previous one left, failing on any refusal. */
function run(mesh: Scenario, steps: ReadonlyArray<[string, Record<string, unknown>]>): Scenario {
  for (const [verb, body] of steps) mesh = next(mesh.when(verb, body));
  return mesh;
}

/** The address the module's entry in `node`'s composed declaration dials, and its env's. */
function declaredAddress(state: State, node: string, module: string): { credential: string; env: string } {
  const result = composeDeclaration(state, node, { controllerSubmits: [] }, (text) => `digest-of-${text.length}`);
  assert.ok(result.ok, result.ok ? "" : result.refusal.code);
  const entry = result.declaration.modules.find((m) => m.module === module);
  assert.ok(entry, `${module} is in ${node}'s declaration`);
  return { credential: entry.credential.address, env: entry.env.MESH_BROKER_ADDRESS };
}

describe("the broker's address from a sequence of records", () => {
  it("R6 R7 R8 R9 R10: genesis, overlay with a hub, broker seat elsewhere, a second hub refused, recorded addresses stay and the broker's own node dials the genesis address", () => {
    const nodes = ["north", "alpha", "beta"];

    // 1. Genesis: no holder of mesh-broker, no overlay. Every node reaches the genesis address, and
    //    the portless address gets the standard port (R8) on every credential path.
    let mesh = given(PORTLESS_GENESIS, registration(broker));
    assert.equal(brokerNode(mesh.state), null, "R6: nothing holds mesh-broker and there is no hub");
    assert.deepEqual(mesh.query("where"), { placed: [], hub: null, broker: null });
    for (const node of nodes) {
      const enrol = mesh.when("node.enrol", { node, publicKey: nodeKeyOf(node), nkey: nodeNkeyOf(node) });
      assert.equal(mintedAddress(enrol), GENESIS_4222, `R7 R8: ${node} is enrolled for the genesis address with port 4222`);
      mesh = next(enrol);
    }
    assert.deepEqual(reach(mesh.state, nodes), { north: GENESIS_4222, alpha: GENESIS_4222, beta: GENESIS_4222 });

    // 2. The overlay gets its hub. While nothing holds mesh-broker the hub stands in (R6), for nodes
    //    on the overlay only (R7); the hub itself, the broker's node, dials the genesis address (the
    //    bus listens there on its own machine). Placing changes no recorded credential (R10) and
    //    north's already points where north reaches the broker, so the reply names none.
    const hubPlaced = mesh.when("overlay.place", { node: "north", hub: true });
    hubPlaced.then([{ type: "OverlayPlaced", node: "north", hub: true, overlayName: "north.internal" }]);
    const hubReply = hubPlaced.reply() as { note: string; staleCredentials: StaleList };
    assert.ok(hubReply.note.length > 0, "R10: the reply carries its note on earlier credentials");
    assert.deepEqual(
      hubReply.staleCredentials.map((c) => [c.user, c.address, c.addressNow]),
      [],
      "R7 R10: north, the broker's node, still reaches the broker at the genesis address",
    );
    mesh = next(hubPlaced);
    assert.equal(brokerNode(mesh.state), "north", "R6: the hub stands in");
    assert.deepEqual(reach(mesh.state, nodes), { north: GENESIS_4222, alpha: GENESIS_4222, beta: GENESIS_4222 });
    assert.deepEqual(recorded(mesh.state), { "node-north": GENESIS_4222, "node-alpha": GENESIS_4222, "node-beta": GENESIS_4222 });

    // 3. alpha joins the overlay; rotating its credential now mints the hub's overlay address (R7:
    //    every credential path uses brokerReachableAt), beta (off the overlay) still the genesis one.
    const alphaPlaced = mesh.when("overlay.place", { node: "alpha" });
    mesh = next(alphaPlaced);
    assert.equal(mintedAddress(mesh.when("credential.rotate", { kind: "node", name: "beta", nkey: nodeNkeyOf("beta rotated") })), GENESIS_4222);
    const alphaRotated = mesh.when("credential.rotate", { kind: "node", name: "alpha", nkey: nodeNkeyOf("alpha rotated") });
    assert.equal(mintedAddress(alphaRotated), "tls://north.internal:4222");
    mesh = next(alphaRotated);

    // 4. A second hub is refused, naming the hub that exists (R9); the records are unchanged.
    const secondHub = mesh.when("overlay.place", { node: "beta", hub: true });
    secondHub.refused("hub-exists", "hub");
    assert.ok(!secondHub.decision.ok && secondHub.decision.refusal.message.includes("north"), "R9: the refusal names the existing hub");
    assert.equal(mesh.state.overlay.hub, "north");

    // 5. The broker seat is assigned elsewhere: alpha, on the overlay, holds mesh-broker. Its overlay
    //    name is the broker's address for every other node on the overlay, the hub included (R6);
    //    alpha itself and beta, off the overlay, dial the genesis address (R7). A module issued on
    //    alpha gets the genesis address too, and north's rotation alpha's overlay name.
    const assigned = mesh.when("assign", { module: "broker", node: "alpha" });
    mesh = next(assigned);
    assert.equal(brokerNode(mesh.state), "alpha", "R6: the holder, not the hub");
    assert.deepEqual((mesh.query("where") as { broker: string | null }).broker, "alpha");
    assert.deepEqual(reach(mesh.state, nodes), { north: "tls://alpha.internal:4222", alpha: GENESIS_4222, beta: GENESIS_4222 });
    assert.equal(mintedAddress(mesh.when("module.issue", { module: "broker" })), GENESIS_4222, "R7: module issue uses it");
    assert.equal(mintedAddress(mesh.when("credential.rotate", { kind: "node", name: "north", nkey: nodeNkeyOf("north rotated") })), "tls://alpha.internal:4222");

    // 6. beta joins the overlay. Credentials issued earlier keep the address they were minted for
    //    (R10): the commit holds no credential event, the records keep every address, and the reply
    //    lists each credential whose principal would now get another address.
    const betaPlaced = mesh.when("overlay.place", { node: "beta" });
    betaPlaced.then([{ type: "OverlayPlaced", node: "beta", hub: false, overlayName: "beta.internal" }]);
    const betaReply = betaPlaced.reply() as { staleCredentials: StaleList };
    assert.deepEqual(
      betaReply.staleCredentials.map((c) => [c.user, c.address, c.addressNow]).sort(),
      [
        ["node-alpha", "tls://north.internal:4222", GENESIS_4222],
        ["node-beta", GENESIS_4222, "tls://alpha.internal:4222"],
        ["node-north", GENESIS_4222, "tls://alpha.internal:4222"],
      ],
    );
    const before = recorded(mesh.state);
    mesh = next(betaPlaced);
    assert.deepEqual(recorded(mesh.state), before, "R10: placing a node rewrites no credential's address");
    assert.deepEqual(reach(mesh.state, nodes), {
      north: "tls://alpha.internal:4222", alpha: GENESIS_4222, beta: "tls://alpha.internal:4222",
    });
  });

  it("R7 R10: a module's declared address is the same whether it was issued before or after its assignment", () => {
    const app = { name: "app", version: "1.0.0" };
    // a one-machine mesh as `mesh up` makes it: the node holds mesh-broker and is the overlay's hub
    const oneMachine = run(given(GENESIS, registration(broker), registration(app)), [
      ["node.enrol", { node: "vm", publicKey: nodeKeyOf("vm"), nkey: nodeNkeyOf("vm") }],
      ["module.issue", { module: "broker" }],
      ["assign", { module: "broker", node: "vm" }],
      ["overlay.place", { node: "vm", hub: true }],
    ]);
    const issuedFirst = run(oneMachine, [["module.issue", { module: "app" }], ["assign", { module: "app", node: "vm" }]]);
    const assignedFirst = run(oneMachine, [["assign", { module: "app", node: "vm" }], ["module.issue", { module: "app" }]]);
    const genesis = { credential: GENESIS_ADDRESS, env: GENESIS_ADDRESS };
    assert.deepEqual(declaredAddress(issuedFirst.state, "vm", "app"), genesis, "issued first: the genesis address every principal reaches");
    assert.deepEqual(declaredAddress(assignedFirst.state, "vm", "app"), genesis, "assigned first: the same, never vm.internal");

    // two machines on the overlay: a module on the second node dials the broker's overlay name,
    // whichever order it was issued, assigned and placed in (the declaration is composed from the
    // state at push time, not from the address recorded at issue)
    const twoMachines = run(oneMachine, [["node.enrol", { node: "far", publicKey: nodeKeyOf("far"), nkey: nodeNkeyOf("far") }]]);
    const orders: Array<ReadonlyArray<[string, Record<string, unknown>]>> = [
      [["module.issue", { module: "app" }], ["assign", { module: "app", node: "far" }], ["overlay.place", { node: "far" }]],
      [["overlay.place", { node: "far" }], ["assign", { module: "app", node: "far" }], ["module.issue", { module: "app" }]],
      [["assign", { module: "app", node: "far" }], ["overlay.place", { node: "far" }], ["module.issue", { module: "app" }]],
    ];
    for (const order of orders) {
      const state = run(twoMachines, order).state;
      const label = order.map(([verb]) => verb).join(", ");
      assert.deepEqual(declaredAddress(state, "far", "app"), { credential: "tls://vm.internal:4443", env: "tls://vm.internal:4443" }, label);
    }
    // off the overlay, the genesis address, whatever the order
    const offOverlay = run(twoMachines, [["assign", { module: "app", node: "far" }], ["module.issue", { module: "app" }]]).state;
    assert.deepEqual(declaredAddress(offOverlay, "far", "app"), genesis);
  });
});
