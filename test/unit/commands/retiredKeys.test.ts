import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  given, givenState, GENESIS, GENESIS_ADDRESS, DEFAULT_ENVELOPE, enrolment, nodeKeyOf, nodeNkeyOf, fakeSecret, registration,
  type EventBody, type Scenario,
} from "../../support/givenWhenThen.ts";
import type { Envelope } from "../../../src/commands/index.ts";
import { MeshEvent } from "../../../src/events/index.ts";
import { evolve } from "../../../src/projections/index.ts";

/**
 * R66: a public key the records ever revoked or replaced is never admitted again. Every way a key
 * leaves the records (its node removed, rotated away, revoked, rotated by an accepted restore) is
 * crossed with every request that offers a public key (node.enrol's nkey and X25519 key,
 * credential.rotate's node nkey); each refusal is `key-retired` naming the field.
 */

/** When the key went: a time no given event carries, so a refusal naming it names the retirement. */
const WENT_AT = "2026-03-03T03:03:03.000Z";
const at = (commandId: string): Envelope => ({ ...DEFAULT_ENVELOPE, commandId, now: WENT_AT });

/** w3 enrolled with its own two keys (what `mesh host init` printed on w3), beside a node that stays. */
const W3 = { publicKey: nodeKeyOf("w3"), nkey: nodeNkeyOf("w3") };
const base: EventBody[] = [
  GENESIS,
  { type: "NodeEnrolled", node: "hub", publicKey: nodeKeyOf("hub") },
  { type: "CredentialMinted", principal: { kind: "node", name: "hub" }, user: "node-hub", nkey: nodeNkeyOf("hub"), address: GENESIS_ADDRESS },
];
const enrolW3 = (scenario: Scenario): Scenario => {
  const outcome = scenario.when("node.enrol", { node: "w3", ...W3 });
  assert.ok(outcome.decision.ok);
  return givenState(outcome.after());
};

/** The scenario after one more commit of `event`, made at WENT_AT. */
function appended(scenario: Scenario, event: EventBody): Scenario {
  const sequence = scenario.state.sequence + 1;
  const commit = { commandId: `c-${sequence}`, entity: { kind: "test", id: "given" }, events: [MeshEvent.parse({ actor: "operator-given", commandId: `c-${sequence}`, at: WENT_AT, ...event })] };
  return givenState(evolve(scenario.state, [{ sequence, commit }]));
}

/** Each way w3's keys leave the records, through the verbs that do it, at WENT_AT. */
const retirements: { why: string; retire(scenario: Scenario): Scenario; sealingKeyRetired: boolean }[] = [
  {
    why: "the node was removed",
    retire: (s) => givenState(s.when("node.remove", { node: "w3" }, at("remove-w3")).after()),
    sealingKeyRetired: true,
  },
  {
    why: "the node's nkey was rotated away",
    retire: (s) => givenState(s.when("credential.rotate", { kind: "node", name: "w3", nkey: nodeNkeyOf("w3, rotated") }, at("rotate-w3")).after()),
    sealingKeyRetired: false,
  },
  {
    why: "the node's credential was revoked (an accepted restore revokes a key the bus ran without, R44)",
    retire: (s) => appended(s, { type: "CredentialRevoked", principal: { kind: "node", name: "w3" } }),
    sealingKeyRetired: false,
  },
];

describe("R66: retired public keys", () => {
  for (const { why, retire, sealingKeyRetired } of retirements) {
    it(`R66: after ${why}, node.enrol refuses its nkey (key-retired, field nkey) under any name, naming when`, () => {
      const after = retire(enrolW3(given(...base)));
      // Its own name too once w3 is gone (re-enrolling a cleaned machine under its old name).
      for (const node of sealingKeyRetired ? ["w3", "w3b"] : ["w3b"]) {
        const outcome = after.when("node.enrol", { node, publicKey: nodeKeyOf("fresh machine"), nkey: W3.nkey });
        outcome.refused("key-retired", "nkey");
        assert.ok(!outcome.decision.ok && outcome.decision.refusal.message.includes(WENT_AT), "the refusal names when the key went");
        assert.ok(!outcome.decision.ok && outcome.decision.refusal.message.includes("mesh host init --force"), "the refusal names the way forward");
      }
    });

    it(`R66: after ${why}, credential.rotate refuses it as a node's new nkey (key-retired, field nkey)`, () => {
      const after = retire(enrolW3(given(...base)));
      after.when("credential.rotate", { kind: "node", name: "hub", nkey: W3.nkey }).refused("key-retired", "nkey");
    });

    it(`R66: after ${why}, node.enrol ${sealingKeyRetired ? "refuses" : "still refuses (in use)"} its X25519 key (field publicKey)`, () => {
      const after = retire(enrolW3(given(...base)));
      after.when("node.enrol", { node: "w3b", publicKey: W3.publicKey, nkey: nodeNkeyOf("fresh machine") })
        .refused(sealingKeyRetired ? "key-retired" : "key-in-use", "publicKey");
    });
  }

  it("R66: the issue's reproduction: enrol w3, remove it, enrol w3b with w3's two keys: refused, and with new keys accepted", () => {
    const after = given(...base, { type: "NodeEnrolled", node: "w3", publicKey: W3.publicKey },
      { type: "CredentialMinted", principal: { kind: "node", name: "w3" }, user: "node-w3", nkey: W3.nkey, address: GENESIS_ADDRESS },
      { type: "NodeRemoved", node: "w3" });
    after.when("node.enrol", { node: "w3b", ...W3 }).refused("key-retired");
    after.when("node.enrol", { node: "w3", ...W3 }).refused("key-retired");
    const fresh = { publicKey: nodeKeyOf("w3, init --force"), nkey: nodeNkeyOf("w3, init --force") };
    assert.ok(after.when("node.enrol", { node: "w3b", ...fresh }).decision.ok);
  });

  it("R66: a node cannot rotate back onto a key it rotated away, nor onto its current one (key-in-use)", () => {
    const first = enrolW3(given(...base));
    const rotated = givenState(first.when("credential.rotate", { kind: "node", name: "w3", nkey: nodeNkeyOf("w3, rotated") }, at("rotate-w3")).after());
    rotated.when("credential.rotate", { kind: "node", name: "w3", nkey: W3.nkey }).refused("key-retired", "nkey");
    rotated.when("credential.rotate", { kind: "node", name: "w3", nkey: nodeNkeyOf("w3, rotated") }).refused("key-in-use", "nkey");
  });

  it("R66: a revoked credential's nkey is refused (key-retired), whoever offers it", () => {
    const revoked = given(...base, ...enrolment("w4"), { type: "CredentialRevoked", principal: { kind: "node", name: "w4" } });
    revoked.when("node.enrol", { node: "w5", publicKey: nodeKeyOf("w5"), nkey: nodeNkeyOf("w4") }).refused("key-retired", "nkey");
    revoked.when("credential.rotate", { kind: "node", name: "hub", nkey: nodeNkeyOf("w4") }).refused("key-retired", "nkey");
  });

  it("R66: a key any principal kind had replaced (operator, module, builder, controller) is refused to a node", () => {
    const kinds = [
      { kind: "operator", name: "ann", extra: [] as EventBody[] },
      { kind: "module", name: "app", extra: [registration({ name: "app", version: "1" }), { type: "ModuleIssued", module: "app" }] as EventBody[] },
      { kind: "builder", name: "b1", extra: [] as EventBody[] },
      { kind: "controller", name: "mesh-controller", extra: [] as EventBody[] },
    ] as const;
    for (const { kind, name, extra } of kinds) {
      const user = `${kind}-${name}`;
      const mesh = given(...base, ...extra,
        { type: "CredentialMinted", principal: { kind, name }, user, nkey: fakeSecret(7).nkey, sealed: "s7", address: GENESIS_ADDRESS },
        { type: "CredentialRotated", principal: { kind, name }, user, nkey: fakeSecret(8).nkey, sealed: "s8", address: GENESIS_ADDRESS });
      mesh.when("node.enrol", { node: "w9", publicKey: nodeKeyOf("w9"), nkey: fakeSecret(7).nkey }).refused("key-retired", "nkey");
      mesh.when("credential.rotate", { kind: "node", name: "hub", nkey: fakeSecret(7).nkey }).refused("key-retired", "nkey");
    }
  });

  it("R66: the modules' keys a node removal rotated are retired too", () => {
    const app = { name: "app", version: "1" };
    const mesh = given(...base, ...enrolment("w3"), registration(app), { type: "ModuleIssued", module: "app" },
      { type: "CredentialMinted", principal: { kind: "module", name: "app" }, user: "module-app", nkey: fakeSecret(7).nkey, sealed: "s7", address: GENESIS_ADDRESS },
      { type: "ModuleAssigned", module: "app", node: "w3" });
    const removed = givenState(mesh.when("node.remove", { node: "w3" }, at("remove-w3")).after());
    removed.when("node.enrol", { node: "w9", publicKey: nodeKeyOf("w9"), nkey: fakeSecret(7).nkey }).refused("key-retired", "nkey");
  });

  it("R66: a key never retired is admitted; the retired keys of one node do not block another's fresh keys", () => {
    const after = retirements[0]!.retire(enrolW3(given(...base)));
    assert.ok(after.when("node.enrol", { node: "w6", publicKey: nodeKeyOf("w6"), nkey: nodeNkeyOf("w6") }).decision.ok);
    assert.ok(after.when("credential.rotate", { kind: "node", name: "hub", nkey: nodeNkeyOf("hub, rotated") }).decision.ok);
  });
});
