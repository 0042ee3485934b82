import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { credentialOf, everySeat, moduleOf, retiredKeyOf } from "../../../src/projections/index.ts";
import { given, givenState, GENESIS, GENESIS_ADDRESS, enrolment, registration, fakeSecret, type EventBody } from "../../support/givenWhenThen.ts";

const echo = { name: "echo", version: "2", seats: { echo: { protocol: "echo/1" } }, claims: ["echo"] };
const caller = { name: "caller", version: "1", uses: ["echo"] };
const issued: EventBody[] = [
  { type: "ModuleIssued", module: "echo" },
  { type: "CredentialMinted", principal: { kind: "module", name: "echo" }, user: "module-echo", nkey: fakeSecret(1).nkey, sealed: "sealed-1", address: GENESIS_ADDRESS },
];
const entity = { kind: "module", id: "echo" };

describe("module.retire", () => {
  it("R66: retires an issued module: its credential is revoked (its key never admitted again) and it leaves the catalogue with its seats", () => {
    const outcome = given(GENESIS, registration(echo), ...issued).when("module.retire", { module: "echo" });
    outcome.then([
      { type: "CredentialRevoked", principal: { kind: "module", name: "echo" } },
      { type: "ModuleRetired", module: "echo", version: "2" },
    ], entity);
    const after = outcome.after();
    assert.equal(moduleOf(after.modules, "echo"), undefined);
    assert.deepEqual(everySeat(after.modules), []);
    assert.equal(credentialOf(after.credentials, { kind: "module", name: "echo" }), undefined);
    assert.equal(retiredKeyOf(after.retired, fakeSecret(1).nkey)?.why, "revoked");
    assert.deepEqual(outcome.reply(), { module: "echo", version: "2", credentialRevoked: true });
  });

  it("a module never issued leaves with ModuleRetired alone", () => {
    const outcome = given(GENESIS, registration(echo)).when("module.retire", { module: "echo" });
    outcome.then([{ type: "ModuleRetired", module: "echo", version: "2" }], entity);
    assert.deepEqual(outcome.reply(), { module: "echo", version: "2", credentialRevoked: false });
  });

  it("is refused while the module is assigned (module-assigned), naming every node and the unassign to run", () => {
    const outcome = given(GENESIS, ...enrolment("alpha"), ...enrolment("beta"), registration(echo),
      { type: "ModuleAssigned", module: "echo", node: "alpha" }, { type: "ModuleAssigned", module: "echo", node: "beta" })
      .when("module.retire", { module: "echo" });
    outcome.refused("module-assigned", "module");
    assert.ok(!outcome.decision.ok);
    assert.match(outcome.decision.refusal.message, /alpha, beta/);
    assert.match(outcome.decision.refusal.message, /mesh unassign echo alpha/);
  });

  it("R25: is refused while another module claims, uses or follows a seat it declares (seat-in-use)", () => {
    given(GENESIS, registration(echo), registration(caller)).when("module.retire", { module: "echo" }).refused("seat-in-use", "module");
  });

  it("R74: is refused while another module uses one of its tools (tool-in-use), naming the line", () => {
    const search = { name: "search", version: "1", tools: [{ name: "query" }] };
    const asker = { name: "asker", version: "1", uses: ["search/query"] };
    const outcome = given(GENESIS, registration(search), registration(asker)).when("module.retire", { module: "search" });
    outcome.refused("tool-in-use", "module");
    assert.ok(!outcome.decision.ok);
    assert.match(outcome.decision.refusal.message, /asker.*search\/query/);
    given(GENESIS, registration(search), registration({ name: "other", version: "1" })).when("module.retire", { module: "search" })
      .then([{ type: "ModuleRetired", module: "search", version: "1" }], { kind: "module", id: "search" });
  });

  it("repeating it is accepted unchanged: nothing appended, the reply says what was retired", () => {
    const first = given(GENESIS, registration(echo), ...issued).when("module.retire", { module: "echo" });
    const again = givenState(first.after()).when("module.retire", { module: "echo" });
    again.unchanged(entity);
    assert.deepEqual(again.reply(), { module: "echo", version: "2", credentialRevoked: false });
  });

  it("a module never registered is refused (unknown-module)", () => {
    given(GENESIS).when("module.retire", { module: "ghost" }).refused("unknown-module", "module");
  });

  it("R66: a retired module may be registered again; it needs a new issue, and its old key stays retired", () => {
    const retired = given(GENESIS, registration(echo), ...issued).when("module.retire", { module: "echo" }).after();
    const back = givenState(retired).when("module.register", { manifest: echo });
    back.then([registration(echo)]);
    const state = back.after();
    assert.equal(moduleOf(state.modules, "echo")?.issued, false);
    assert.equal(retiredKeyOf(state.retired, fakeSecret(1).nkey)?.why, "revoked");
    givenState(state).when("module.retire", { module: "echo" }).then([{ type: "ModuleRetired", module: "echo", version: "2" }]);
  });
});
