/**
 * The names the bus's certificate carries (R71), from the records alone: every host any principal
 * is told to dial. Each case folds a small story and reads busCertificateNames; the last test
 * checks, over every node of each story, that each address brokerReachableAt tells a node is named.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  brokerNode, brokerReachableAt, busCertificateNames, certificateNames, initialState, namesDiffer, nodeNames, parseBusAddress,
} from "../../src/projections/index.ts";
import { GENESIS, nodeKeyOf, nodeNkeyOf, given, givenState, registration, type EventBody, type Scenario } from "../support/givenWhenThen.ts";

const broker = { name: "broker", version: "2.9.10", seats: { "mesh-broker": { protocol: "nats" } }, claims: ["mesh-broker"] };
const LOOPBACK = ["127.0.0.1", "::1", "localhost"];

/** A mesh at genesis with the broker module registered and `nodes` enrolled. */
function enrolled(genesis: EventBody, nodes: readonly string[]): Scenario {
  let mesh = given(genesis, registration(broker));
  for (const node of nodes) mesh = step(mesh, "node.enrol", { node, publicKey: nodeKeyOf(node), nkey: nodeNkeyOf(node) });
  return step(mesh, "module.issue", { module: "broker" });
}

/** One accepted command, continuing the story. */
function step(mesh: Scenario, verb: string, body: Record<string, unknown>): Scenario {
  const outcome = mesh.when(verb, body);
  assert.ok(outcome.decision.ok, outcome.decision.ok ? "" : `${verb} refused ${outcome.decision.refusal.code}`);
  return givenState(outcome.after());
}

describe("R71: the names of the bus's certificate", () => {
  it("R71: at genesis, the genesis host and loopback", () => {
    assert.deepEqual(busCertificateNames(given(GENESIS).state), ["127.0.0.1", "::1", "bus.example", "localhost"]);
  });

  it("R71: the names given at genesis (--name), lower-cased, each once", () => {
    const state = given({ ...GENESIS, names: ["Bus.Example", "vm.internal", "10.0.0.5", "vm.internal"] } as EventBody).state;
    assert.deepEqual(busCertificateNames(state), ["10.0.0.5", "127.0.0.1", "::1", "bus.example", "localhost", "vm.internal"]);
  });

  it("R71: an IP genesis address and every cluster server's host", () => {
    const state = given({ ...GENESIS, genesisAddress: "tls://10.0.0.1:4222", addresses: ["tls://10.0.0.1:4222", "tls://10.0.0.2:4222", "tls://[fd00::3]:4222"] } as EventBody).state;
    assert.deepEqual(busCertificateNames(state), ["10.0.0.1", "10.0.0.2", "127.0.0.1", "::1", "fd00::3", "localhost"]);
  });

  it("R71: the hub stands in for the broker while nothing holds mesh-broker; other placed nodes are not named", () => {
    let mesh = enrolled(GENESIS, ["north", "alpha"]);
    mesh = step(mesh, "overlay.place", { node: "alpha" });
    assert.deepEqual(busCertificateNames(mesh.state), ["127.0.0.1", "::1", "bus.example", "localhost"], "no hub, no holder: no overlay name");
    mesh = step(mesh, "overlay.place", { node: "north", hub: true });
    assert.deepEqual(busCertificateNames(mesh.state), ["127.0.0.1", "::1", "bus.example", "localhost", "north.internal"]);
  });

  it("R71: a holder of mesh-broker is named once it is placed on the overlay, and the hub it replaced no more", () => {
    let mesh = enrolled(GENESIS, ["north", "alpha"]);
    mesh = step(mesh, "overlay.place", { node: "north", hub: true });
    mesh = step(mesh, "assign", { module: "broker", node: "alpha" });
    assert.deepEqual(busCertificateNames(mesh.state), ["127.0.0.1", "::1", "bus.example", "localhost"], "alpha is not on the overlay yet");
    mesh = step(mesh, "overlay.place", { node: "alpha" });
    assert.deepEqual(busCertificateNames(mesh.state), ["127.0.0.1", "::1", "alpha.internal", "bus.example", "localhost"]);
  });

  it("R71: a handover of the broker's seat names the new holder and drops the old", () => {
    let mesh = enrolled(GENESIS, ["north", "alpha"]);
    mesh = step(mesh, "overlay.place", { node: "north", hub: true });
    mesh = step(mesh, "overlay.place", { node: "alpha" });
    mesh = step(mesh, "assign", { module: "broker", node: "north" });
    const before = busCertificateNames(mesh.state);
    assert.ok(before.includes("north.internal") && !before.includes("alpha.internal"));
    mesh = step(mesh, "seat.handover", { seat: "mesh-broker", from: "north", to: "alpha" });
    const after = busCertificateNames(mesh.state);
    assert.deepEqual(after, ["127.0.0.1", "::1", "alpha.internal", "bus.example", "localhost"]);
    assert.ok(namesDiffer(before, after), "the push sees the set changed");
  });

  it("R71: two holders of mesh-broker are both named", () => {
    let mesh = enrolled(GENESIS, ["north", "alpha", "beta"]);
    for (const node of ["north", "alpha", "beta"]) mesh = step(mesh, "overlay.place", { node, ...(node === "north" ? { hub: true } : {}) });
    mesh = step(mesh, "assign", { module: "broker", node: "alpha" });
    mesh = step(mesh, "assign", { module: "broker", node: "beta" });
    assert.deepEqual(busCertificateNames(mesh.state), ["127.0.0.1", "::1", "alpha.internal", "beta.internal", "bus.example", "localhost"]);
  });

  it("R71: every address brokerReachableAt tells any node is named, at every step of a story", () => {
    const steps: Array<[string, Record<string, unknown>]> = [
      ["overlay.place", { node: "north", hub: true }],
      ["overlay.place", { node: "alpha" }],
      ["assign", { module: "broker", node: "north" }],
      ["overlay.place", { node: "beta" }],
      ["seat.handover", { seat: "mesh-broker", from: "north", to: "beta" }],
      ["assign", { module: "broker", node: "alpha" }],
    ];
    let mesh = enrolled({ ...GENESIS, names: ["public.example"] } as EventBody, ["north", "alpha", "beta"]);
    for (const [verb, body] of steps) {
      mesh = step(mesh, verb, body);
      const names = busCertificateNames(mesh.state);
      const broker = brokerNode(mesh.state);
      for (const node of nodeNames(mesh.state.nodes)) {
        const host = parseBusAddress(brokerReachableAt(mesh.state, node, broker)).host;
        assert.ok(names.includes(host), `after ${verb}: ${node} is told ${host}, named in ${names.join(",")}`);
      }
      for (const name of [...LOOPBACK, "public.example", "bus.example"]) assert.ok(names.includes(name), `${name} after ${verb}`);
    }
  });

  it("R71: without a genesis record there is no name set", () => {
    assert.throws(() => busCertificateNames(initialState));
  });

  it("R71: certificateNames drops brackets and empties; namesDiffer ignores order and case", () => {
    assert.deepEqual(certificateNames(["[::1]", "", " A.example ", "a.example", "0:0:0:0:0:0:0:1", "FD00:0:0:0:0:0:0:3"]), ["::1", "a.example", "fd00::3"]);
    assert.equal(namesDiffer(["b", "A"], ["a", "b"]), false);
    assert.equal(namesDiffer(["a"], ["a", "b"]), true);
  });
});
