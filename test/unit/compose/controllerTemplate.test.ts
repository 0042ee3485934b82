import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { controllerReplyInboxes, permissionsOf, renderUserList } from "../../../src/compose/index.ts";
import { CATALOGUE_ERASE_SUBJECTS, CATALOGUE_STREAM, CONTROLLER_NAME, busUser, inboxSubjects } from "../../../src/names.ts";
import { evolve, initialState } from "../../../src/projections/index.ts";
import { carriedControllerPermissions, carriedUsers, GENESIS_COMPOSE_CONFIG } from "../../../installer/carried.ts";
import { decideGenesis } from "../../../src/commands/genesis.ts";
import { EXAMPLE_CONFIG, exampleMesh } from "./exampleMesh.ts";
import { fakeSecret } from "../../support/givenWhenThen.ts";

const templateFile = fileURLToPath(new URL("../../../installer/controller-permissions.json", import.meta.url));
type Template = {
  user: string;
  controllerSubmits: string[];
  publish: { allow: string[]; deny?: string[] };
  subscribe: { allow: string[] };
  allow_responses?: boolean;
  wildcards: Record<string, string>;
};
const template = JSON.parse(readFileSync(templateFile, "utf8")) as Template;

describe("the controller's carried permissions", () => {
  const { state } = exampleMesh();
  const derived = permissionsOf(state, { kind: "controller", name: CONTROLLER_NAME }, { controllerSubmits: template.controllerSubmits });

  it("R15: the template is stated for the example's submit list and the controller's bootstrap user", () => {
    assert.deepEqual(template.controllerSubmits, [...EXAMPLE_CONFIG.controllerSubmits]);
    assert.equal(template.user, busUser("controller", CONTROLLER_NAME));
  });

  it("R15: every derived subject is carried (the template and the reply grants on the same operators), and nothing wider", () => {
    const carriedPermissions = carriedControllerPermissions(state);
    for (const side of ["publish", "subscribe"] as const) {
      const carried = new Set(carriedPermissions[side].allow);
      const composed = new Set(derived[side].allow);
      assert.deepEqual([...composed].filter((s) => !carried.has(s)), [], `${side}: derived but not carried`);
      assert.deepEqual([...carried].filter((s) => !composed.has(s)), [], `${side}: carried but not derived`);
    }
    assert.equal(template.allow_responses ?? false, derived.allow_responses ?? false);
    assert.deepEqual(carriedPermissions, derived);
  });

  it("R15 R33: the template names no inbox to publish to; the reply grants come from the records alone", () => {
    assert.deepEqual(template.publish.allow.filter((s) => s.startsWith("_INBOX")), []);
    assert.deepEqual(derived.publish.allow.filter((s) => s.startsWith("_INBOX")), [inboxSubjects(busUser("operator", "ada"))]);
  });

  it("R13 R15: the list carried at genesis grants the controller replies to the genesis operator's inbox, as composition derives them", () => {
    const secret = fakeSecret(1);
    const decision = decideGenesis(initialState, {
      genesisAddress: "tls://127.0.0.1:4222", fingerprint: "AA", bootstrapUser: busUser("controller", CONTROLLER_NAME),
      operator: "admin", operatorSecret: secret, now: "2026-01-01T00:00:00.000Z",
    });
    assert.ok(decision.ok);
    const genesisState = evolve(initialState, [{ sequence: 1, commit: { commandId: "genesis", entity: decision.entity, events: decision.events } }]);
    const controller = carriedUsers(genesisState, GENESIS_COMPOSE_CONFIG).find((u) => u.principal.kind === "controller")!;
    const replies = controller.permissions.publish.allow.filter((s) => s.startsWith("_INBOX"));
    assert.deepEqual(replies, [inboxSubjects(busUser("operator", "admin"))]);
    assert.deepEqual(replies, controllerReplyInboxes(genesisState));
    const derivedAtGenesis = permissionsOf(genesisState, { kind: "controller", name: CONTROLLER_NAME }, GENESIS_COMPOSE_CONFIG);
    assert.deepEqual(derivedAtGenesis.publish.allow.filter((s) => s.startsWith("_INBOX")), replies, "the same function builds both");
    assert.equal(controller.permissions.allow_responses, undefined);
  });

  it("R47 R15: the controller is denied deleting or purging CATALOGUE (and deleting its messages), in the template and the derivation alike", () => {
    assert.deepEqual(derived.publish.deny, [...CATALOGUE_ERASE_SUBJECTS].sort());
    assert.ok(derived.publish.deny!.includes(`$JS.API.STREAM.DELETE.${CATALOGUE_STREAM}`));
    assert.deepEqual(template.publish.deny, derived.publish.deny);
    assert.deepEqual(carriedControllerPermissions(state).publish.deny, derived.publish.deny);
    assert.match(renderUserList({ users: [{ user: "u", nkey: `U${"A".repeat(55)}`, principal: { kind: "controller", name: CONTROLLER_NAME }, permissions: derived }] }), /deny: \["\$JS\.API\.STREAM\.DELETE\.CATALOGUE"/);
  });

  it("R15: every wildcard of the template is explained", () => {
    for (const subject of [...template.publish.allow, ...template.subscribe.allow]) {
      if (subject.includes(">") || subject.includes("*")) assert.ok(template.wildcards[subject], `unexplained wildcard ${subject}`);
    }
  });
});
