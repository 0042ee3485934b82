import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { decideBootstrapRotation, decideRecordControllerCredential } from "../../../src/commands/controllerCredential.ts";
import type { Decision, Envelope } from "../../../src/commands/index.ts";
import { MeshEvent } from "../../../src/events/index.ts";
import { CONTROLLER_PRINCIPAL, credentialOf, evolve, type State } from "../../../src/projections/index.ts";
import { CONTROLLER_NAME, busUser } from "../../../src/names.ts";
import { GENESIS, GENESIS_ADDRESS, NOW, enrolment, fakeSecret, registration, stateOf, type EventBody } from "../../support/givenWhenThen.ts";

/**
 * R14 decided without a server: the controller's credential is recorded only if none is, and moved
 * off the bootstrap password once a node holds mesh-broker. Each case of the inputs the decides
 * read (genesis, a recorded controller credential and which hash it holds, a broker holder) is
 * listed below, so a new branch in either decide fails a row.
 */

const envelope: Envelope = { commandId: "controller-credential-1", actor: "controller-mesh-controller", now: NOW, secrets: [] };
const CONTROLLER_USER = busUser("controller", CONTROLLER_NAME);
const BOOTSTRAP = fakeSecret(100);
const ROTATED = fakeSecret(200);
const FRESH = fakeSecret(300);
const IN_USE = { user: CONTROLLER_USER, address: GENESIS_ADDRESS, nkey: FRESH.nkey, sealed: FRESH.sealed };

const controllerRecord = (secret: { nkey: string; sealed: string }): EventBody => ({
  type: "CredentialMinted", principal: { ...CONTROLLER_PRINCIPAL }, user: CONTROLLER_USER, nkey: secret.nkey, sealed: secret.sealed, address: GENESIS_ADDRESS,
});
const broker = { name: "broker", version: "1", seats: { "mesh-broker": { protocol: "nats" } }, claims: ["mesh-broker"] };
const withBroker: EventBody[] = [...enrolment("alpha"), registration(broker), { type: "ModuleAssigned", module: "broker", node: "alpha" }];

/** The state after a decision's commit (asserts it was accepted and its events are valid). */
function after(state: State, decision: Decision): State {
  assert.ok(decision.ok && !decision.unchanged, decision.ok ? "unchanged" : decision.refusal.code);
  for (const event of decision.events) MeshEvent.parse(event);
  return evolve(state, [{ sequence: state.sequence + 1, commit: { commandId: envelope.commandId, entity: decision.entity, events: decision.events } }]);
}
const code = (decision: Decision) => (decision.ok ? "accepted" : decision.refusal.code);

describe("decideRecordControllerCredential (R14, start)", () => {
  const cases: Array<{ name: string; given: EventBody[]; expected: string }> = [
    { name: "no genesis", given: [], expected: "no-mesh" },
    { name: "genesis, no controller credential", given: [GENESIS], expected: "accepted" },
    { name: "genesis and nodes, no controller credential", given: [GENESIS, ...withBroker], expected: "accepted" },
    { name: "the bootstrap credential recorded", given: [GENESIS, controllerRecord(BOOTSTRAP)], expected: "already-recorded" },
    { name: "a rotated credential recorded", given: [GENESIS, controllerRecord(ROTATED)], expected: "already-recorded" },
    { name: "the very credential in use recorded", given: [GENESIS, controllerRecord(FRESH)], expected: "already-recorded" },
  ];
  for (const c of cases) {
    it(`R14: records the credential in use only if none is recorded: ${c.name} → ${c.expected}`, () => {
      const state = stateOf(c.given);
      const before = JSON.stringify(state);
      assert.equal(code(decideRecordControllerCredential(state, IN_USE, envelope)), c.expected);
      assert.equal(JSON.stringify(state), before, "decide leaves its state as it was");
    });
  }

  it("R14 R63: the record is a CredentialMinted of the controller with the public key in use, and a second start records nothing over it", () => {
    const state = stateOf([GENESIS]);
    const decision = decideRecordControllerCredential(state, IN_USE, envelope);
    assert.ok(decision.ok && !decision.unchanged);
    assert.deepEqual(decision.entity, { kind: "controller", id: CONTROLLER_NAME });
    assert.deepEqual(decision.events, [{
      actor: envelope.actor, commandId: envelope.commandId, at: NOW, type: "CredentialMinted",
      principal: { kind: "controller", name: CONTROLLER_NAME }, user: CONTROLLER_USER, nkey: FRESH.nkey, sealed: FRESH.sealed, address: GENESIS_ADDRESS,
    }]);
    const next = after(state, decision);
    assert.equal(credentialOf(next.credentials, CONTROLLER_PRINCIPAL)?.nkey, FRESH.nkey);
    const restart = decideRecordControllerCredential(next, { ...IN_USE, nkey: BOOTSTRAP.nkey, sealed: BOOTSTRAP.sealed }, envelope);
    assert.equal(code(restart), "already-recorded", "a restart with the bootstrap password does not put it back");
  });
});

describe("decideBootstrapRotation (R14, push)", () => {
  const input = { bootstrapKey: BOOTSTRAP.nkey, fresh: { nkey: FRESH.nkey, sealed: FRESH.sealed } };
  const cases: Array<{ name: string; given: EventBody[]; expected: string }> = [
    { name: "no broker holder, no controller credential", given: [GENESIS], expected: "no-broker-holder" },
    { name: "no broker holder, the bootstrap credential", given: [GENESIS, controllerRecord(BOOTSTRAP)], expected: "no-broker-holder" },
    { name: "no broker holder, a rotated credential", given: [GENESIS, controllerRecord(ROTATED)], expected: "no-broker-holder" },
    { name: "a broker holder, no controller credential", given: [GENESIS, ...withBroker], expected: "no-credential" },
    { name: "a broker holder, the bootstrap credential", given: [GENESIS, controllerRecord(BOOTSTRAP), ...withBroker], expected: "accepted" },
    { name: "a broker holder, a rotated credential", given: [GENESIS, controllerRecord(ROTATED), ...withBroker], expected: "already-rotated" },
  ];
  for (const c of cases) {
    it(`R14: rotates the controller off the bootstrap password once a node holds mesh-broker: ${c.name} → ${c.expected}`, () => {
      const state = stateOf(c.given);
      const before = JSON.stringify(state);
      assert.equal(code(decideBootstrapRotation(state, input, envelope)), c.expected);
      assert.equal(JSON.stringify(state), before, "decide leaves its state as it was");
    });
  }

  it("R14: the rotation keeps the controller's user and address, carries the fresh key and seal, and happens once", () => {
    const state = stateOf([GENESIS, controllerRecord(BOOTSTRAP), ...withBroker]);
    const decision = decideBootstrapRotation(state, input, envelope);
    assert.ok(decision.ok && !decision.unchanged);
    assert.deepEqual(decision.entity, { kind: "controller", id: CONTROLLER_NAME });
    assert.deepEqual(decision.events, [{
      actor: envelope.actor, commandId: envelope.commandId, at: NOW, type: "CredentialRotated",
      principal: { kind: "controller", name: CONTROLLER_NAME }, user: CONTROLLER_USER, nkey: FRESH.nkey, sealed: FRESH.sealed, address: GENESIS_ADDRESS,
    }]);
    const next = after(state, decision);
    assert.equal(credentialOf(next.credentials, CONTROLLER_PRINCIPAL)?.nkey, FRESH.nkey);
    assert.equal(code(decideBootstrapRotation(next, input, envelope)), "already-rotated", "the next push does not rotate again");
  });
});
