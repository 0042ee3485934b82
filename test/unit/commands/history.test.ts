import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { MeshEvent, type Commit, type Entity } from "../../../src/events/index.ts";
import { historyOf, mentions, parseRequest, queries, HISTORY_LIMIT } from "../../../src/commands/index.ts";
import type { SequencedCommit } from "../../../src/projections/index.ts";
import { ENTITY_KINDS } from "../../../src/names.ts";
import { GENESIS, NOW, enrolment, fakeSecret, registration, type EventBody } from "../../support/givenWhenThen.ts";
import { EVENT_TYPES, generateCommits } from "../../support/history.ts";

const broker = { name: "broker", version: "1", seats: { "mesh-broker": { protocol: "nats" } }, claims: ["mesh-broker"] };
const secret = fakeSecret(9);
const operatorMinted: EventBody = {
  type: "CredentialMinted", principal: { kind: "operator", name: "admin" }, user: "operator-admin",
  nkey: secret.nkey, sealed: secret.sealed, address: "tls://bus.example:4443",
};

/** One commit per group of events, filed under `entity`, sequences from 1. */
function commitsOf(groups: ReadonlyArray<{ entity: Entity; events: EventBody[] }>): SequencedCommit[] {
  return groups.map(({ entity, events }, i) => {
    const commandId = `c${i + 1}`;
    const commit: Commit = { commandId, entity, events: events.map((e) => MeshEvent.parse({ actor: "operator-admin", commandId, at: NOW, ...e })) };
    return { sequence: i + 1, commit };
  });
}

const records = commitsOf([
  { entity: { kind: "mesh", id: "genesis" }, events: [GENESIS, operatorMinted] },
  { entity: { kind: "node", id: "vm" }, events: enrolment("vm") },
  { entity: { kind: "node", id: "box" }, events: enrolment("box") },
  { entity: { kind: "module", id: "broker" }, events: [registration(broker)] },
  { entity: { kind: "module", id: "broker" }, events: [{ type: "ModuleAssigned", module: "broker", node: "vm" }] },
  { entity: { kind: "seat", id: "mesh-broker" }, events: [{ type: "SeatHandedOver", seat: "mesh-broker", from: "vm", to: "box" }] },
  { entity: { kind: "push", id: "p1" }, events: [{ type: "DeclarationSent", node: "vm", digest: "a".repeat(64), recordsSequence: 6 }] },
]);

const typesOf = (entity: Entity) => historyOf(records, { kind: entity.kind as never, id: entity.id }).events.map((e) => `${e.sequence}:${e.type}`);

describe("history", () => {
  it("R17: a seat's history has the registration that declared it and its handover, though neither was filed under the seat only", () => {
    assert.deepEqual(typesOf({ kind: "seat", id: "mesh-broker" }), ["4:ModuleRegistered", "6:SeatHandedOver"]);
  });

  it("R1: an operator's history has its credential minted at genesis (filed under mesh/genesis)", () => {
    assert.deepEqual(typesOf({ kind: "operator", id: "admin" }), ["1:CredentialMinted"]);
  });

  it("R31: a node's history has its own commits, the modules assigned to it, handovers and the declarations pushes sent it", () => {
    assert.deepEqual(typesOf({ kind: "node", id: "vm" }), ["2:NodeEnrolled", "2:CredentialMinted", "5:ModuleAssigned", "6:SeatHandedOver", "7:DeclarationSent"]);
    assert.deepEqual(typesOf({ kind: "node", id: "box" }), ["3:NodeEnrolled", "3:CredentialMinted", "6:SeatHandedOver"]);
  });

  it("a push's history is what was filed under it; a module's has its assignment", () => {
    assert.deepEqual(typesOf({ kind: "push", id: "p1" }), ["7:DeclarationSent"]);
    assert.deepEqual(typesOf({ kind: "module", id: "broker" }), ["4:ModuleRegistered", "5:ModuleAssigned"]);
  });

  it("R3: rows name the other party and carry no hash or sealed secret", () => {
    const answer = historyOf(records, { kind: "node", id: "vm" });
    const assigned = answer.events.find((e) => e.type === "ModuleAssigned")!;
    assert.match(assigned.summary, /broker/);
    assert.match(assigned.summary, /vm/);
    assert.equal(assigned.filedUnder, "module/broker");
    const text = JSON.stringify([answer, historyOf(records, { kind: "operator", id: "admin" })]);
    // The public key may show (R63: it is no secret, and it ties a list line to its principal).
    assert.ok(!text.includes(secret.seed) && !text.includes(secret.sealed) && !/"hash"/.test(text), "no seed, hash or sealed secret in history");
  });

  it("answers the newest `limit` events and says older ones were left out", () => {
    const answer = historyOf(records, { kind: "node", id: "vm", limit: 2 });
    assert.deepEqual(answer.events.map((e) => e.type), ["SeatHandedOver", "DeclarationSent"]);
    assert.equal(answer.total, 5);
    assert.equal(answer.truncated, true);
    assert.equal(historyOf(records, { kind: "node", id: "vm" }).truncated, false);
  });

  it("caps an answer at HISTORY_LIMIT events and under the bus's 1 MiB", () => {
    const many = commitsOf(Array.from({ length: HISTORY_LIMIT + 50 }, (_, i) => ({
      entity: { kind: "push", id: `p${i}` }, events: [{ type: "DeclarationSent", node: "vm", digest: "b".repeat(64), recordsSequence: i } as EventBody],
    })));
    const answer = historyOf(many, { kind: "node", id: "vm" });
    assert.equal(answer.events.length, HISTORY_LIMIT);
    assert.equal(answer.events.at(-1)!.sequence, HISTORY_LIMIT + 50);
    assert.ok(Buffer.byteLength(JSON.stringify(answer)) < 1024 * 1024);
  });

  it("mentions decides every event type of a generated history without throwing", () => {
    const seen = new Set<string>();
    for (const commit of generateCommits({ seed: 7, events: 300 })) {
      for (const event of commit.events) {
        seen.add(event.type);
        for (const kind of ENTITY_KINDS) mentions(event, { kind, id: "x" });
      }
    }
    assert.deepEqual([...seen].sort(), [...EVENT_TYPES].sort());
  });

  it("refuses a kind no commit is filed under (invalid-request), naming the valid kinds", () => {
    const parsed = parseRequest(queries["history"]!.schema, { kind: "nde", id: "vm" });
    assert.ok(!parsed.ok);
    assert.equal(parsed.refusal.code, "invalid-request");
    assert.equal(parsed.refusal.field, "kind");
    for (const kind of ENTITY_KINDS) assert.ok(parsed.refusal.message.includes(kind), `names ${kind}`);
    for (const kind of ENTITY_KINDS) assert.ok(parseRequest(queries["history"]!.schema, { kind, id: "vm" }).ok, kind);
  });
});
