import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { historyOf, queries, parseRequest } from "../../../src/commands/index.ts";
import type { SequencedCommit } from "../../../src/projections/index.ts";
import { given, GENESIS, GENESIS_ADDRESS, NOW, NODE_KEY, NODE_NKEY, enrolment, registration, fakeSecret, type EventBody } from "../../support/givenWhenThen.ts";

const broker = { name: "broker", version: "1", seats: { "mesh-broker": { protocol: "nats" } }, claims: ["mesh-broker"] };
const filter = { name: "packet-filter", version: "1", seats: { "packet-filter": { protocol: "", scope: "node" } }, claims: ["packet-filter"] };
const mesh: EventBody[] = [
  GENESIS, ...enrolment("hub"), ...enrolment("alpha"),
  registration(broker), registration(filter),
  { type: "ModuleIssued", module: "broker" },
  { type: "CredentialMinted", principal: { kind: "module", name: "broker" }, user: "module-broker", nkey: fakeSecret(3).nkey, sealed: "sealed-3", address: GENESIS_ADDRESS },
  { type: "ModuleAssigned", module: "broker", node: "alpha" },
  { type: "SeatAliased", from: "bus", to: "mesh-broker" },
  { type: "OverlayPlaced", node: "hub", hub: true, overlayName: "hub.internal" },
  { type: "OverlayPlaced", node: "alpha", hub: false, overlayName: "alpha.internal" },
];

describe("queries", () => {
  it("R6 R7: where answers the placed nodes (an array of objects, sorted), the hub and the broker's node", () => {
    assert.deepEqual(given(...mesh).query("where"), {
      placed: [
        { node: "alpha", overlayName: "alpha.internal", hub: false, broker: true },
        { node: "hub", overlayName: "hub.internal", hub: true, broker: false },
      ],
      hub: "hub", broker: "alpha",
    });
    assert.deepEqual(given(GENESIS).query("where"), { placed: [], hub: null, broker: null });
  });

  it("R17 R24 R27: seats answers each seat's fields, holders and aliases", () => {
    const answer = given(...mesh).query("seats") as { seats: Array<Record<string, unknown>> };
    assert.deepEqual(answer.seats, [
      { name: "mesh-broker", declaredBy: "broker", protocol: "nats", marker: false, accepts: [], emits: [], provides: null, scope: "mesh", claimants: ["broker"], holders: ["alpha"], aliases: ["bus"] },
      { name: "packet-filter", declaredBy: "packet-filter", protocol: "", marker: true, accepts: [], emits: [], provides: null, scope: "node", claimants: ["packet-filter"], holders: [], aliases: [] },
    ]);
  });

  it("nodes answers each node's overlay place, modules and credential address", () => {
    const answer = given(...mesh).query("nodes") as { nodes: Array<Record<string, unknown>> };
    assert.deepEqual(answer.nodes.map((n) => [n["name"], n["overlayName"], n["hub"], n["modules"], n["credentialAddress"]]), [
      ["alpha", "alpha.internal", false, ["broker"], GENESIS_ADDRESS],
      ["hub", "hub.internal", true, [], GENESIS_ADDRESS],
    ]);
  });

  it("modules answers each module's version, issue and nodes", () => {
    const answer = given(...mesh).query("modules") as { modules: Array<Record<string, unknown>> };
    assert.deepEqual(answer.modules.map((m) => [m["name"], m["issued"], m["nodes"], m["declares"]]), [
      ["broker", true, ["alpha"], ["mesh-broker"]],
      ["packet-filter", false, [], ["packet-filter"]],
    ]);
  });

  it("R3: credentials answers principal, user, address and time, never a hash or sealed secret", () => {
    const answer = given(...mesh).query("credentials") as { credentials: unknown[] };
    assert.deepEqual(answer.credentials, [
      { principal: { kind: "module", name: "broker" }, user: "module-broker", address: GENESIS_ADDRESS, mintedAt: NOW },
      { principal: { kind: "node", name: "alpha" }, user: "node-alpha", address: GENESIS_ADDRESS, mintedAt: NOW },
      { principal: { kind: "node", name: "hub" }, user: "node-hub", address: GENESIS_ADDRESS, mintedAt: NOW },
    ]);
    const text = JSON.stringify(answer);
    assert.ok(!text.includes("$2a$") && !text.includes("sealed-"));
  });

  it("R3: history answers one entity's events with actor, command id and time, without secrets", () => {
    const enrol = given(GENESIS).when("node.enrol", { node: "alpha", publicKey: NODE_KEY, nkey: NODE_NKEY });
    assert.ok(enrol.decision.ok);
    const commits: SequencedCommit[] = [
      { sequence: 7, commit: { commandId: "cmd-when", entity: enrol.decision.entity, events: enrol.decision.events } },
      { sequence: 8, commit: { commandId: "other", entity: { kind: "node", id: "beta" }, events: [{ actor: "x", commandId: "other", at: NOW, type: "NodeRemoved", node: "beta" }] } },
    ];
    const answer = historyOf(commits, { kind: "node", id: "alpha" });
    assert.deepEqual(answer.entity, { kind: "node", id: "alpha" });
    assert.deepEqual(answer.events.map((e) => [e.sequence, e.type, e.actor, e.commandId, e.at]), [
      [7, "NodeEnrolled", "operator-alice", "cmd-when", NOW],
      [7, "CredentialMinted", "operator-alice", "cmd-when", NOW],
    ]);
    const text = JSON.stringify(answer);
    assert.ok(!text.includes("$2a$") && !text.includes("sealed-"), "no hash or sealed secret in history");
  });

  it("queries refuse unknown fields (invalid-request)", () => {
    const parsed = parseRequest(queries["where"]!.schema, { everything: true });
    assert.ok(!parsed.ok && parsed.refusal.code === "invalid-request" && parsed.refusal.field === "everything");
    const history = parseRequest(queries["history"]!.schema, { kind: "Node", id: "alpha" });
    assert.ok(!history.ok && history.refusal.field === "kind");
  });
});
