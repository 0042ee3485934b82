import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { decideDeclarationsSent } from "../../../src/commands/declarationsSent.ts";
import type { Envelope } from "../../../src/commands/index.ts";
import { MeshEvent } from "../../../src/events/index.ts";
import { composeDeclarations } from "../../../src/compose/declaration.ts";
import { evolve, lastSent } from "../../../src/projections/index.ts";
import { sha256 } from "../../../src/push/composition.ts";
import { EXAMPLE_CONFIG, exampleMesh } from "../compose/exampleMesh.ts";

/** R31 decided without a server: the records say what each node was last sent. */

const envelope: Envelope = { commandId: "push-1-sent-0-0", actor: "controller-mesh-controller", now: "2026-01-01T00:00:00.000Z", secrets: [] };

describe("decideDeclarationsSent (R31)", () => {
  it("R31: one DeclarationSent per sent node, in order, with the records sequence; after it no node sent is behind", () => {
    const { state } = exampleMesh();
    const composed = composeDeclarations(state, EXAMPLE_CONFIG, sha256).declarations.flatMap((d) => (d.ok ? [{ node: d.declaration.node, digest: d.declaration.digest }] : []));
    assert.ok(composed.length >= 3);
    const sent = composed.filter((s) => s.node !== "beta");
    const decision = decideDeclarationsSent(state, { pushId: "push-1", sent, recordsSequence: state.sequence }, envelope);
    assert.ok(decision.ok && !decision.unchanged);
    assert.deepEqual(decision.entity, { kind: "push", id: "push-1" });
    assert.deepEqual(decision.events, sent.map((s) => ({ ...{ actor: envelope.actor, commandId: envelope.commandId, at: envelope.now }, type: "DeclarationSent", node: s.node, digest: s.digest, recordsSequence: state.sequence })));
    for (const event of decision.events) MeshEvent.parse(event);
    const next = evolve(state, [{ sequence: state.sequence + 1, commit: { commandId: envelope.commandId, entity: decision.entity, events: decision.events } }]);
    const behind = composed.filter((c) => lastSent(next.sent, c.node)?.digest !== c.digest).map((c) => c.node);
    assert.deepEqual(behind, ["beta"], "only the node not sent is behind (DeclarationSent does not change what composes)");
    assert.equal(lastSent(next.sent, "alpha")?.recordsSequence, state.sequence);
  });

  it("R31: nothing sent is nothing to record (nothing-sent)", () => {
    const decision = decideDeclarationsSent(exampleMesh().state, { pushId: "push-1", sent: [], recordsSequence: 1 }, envelope);
    assert.ok(!decision.ok);
    assert.equal(decision.refusal.code, "nothing-sent");
    assert.equal(decision.refusal.field, "sent");
  });
});
