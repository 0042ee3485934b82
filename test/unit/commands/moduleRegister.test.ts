import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { Manifest } from "../../../src/manifest/manifest.ts";
import { given, GENESIS, enrolment, registration } from "../../support/givenWhenThen.ts";
import { declaredSeat } from "../../../src/projections/index.ts";

const broker = { name: "broker", version: "1", seats: { "mesh-broker": { protocol: "nats" } }, claims: ["mesh-broker"] };
const builder = { name: "builder", version: "1", seats: { "mesh-build": { protocol: "mesh-work", accepts: ["build"], emits: ["built"] } }, claims: ["mesh-build"] };

describe("module.register", () => {
  it("R23: registers a manifest, recording it parsed with its defaults filled in", () => {
    const outcome = given(GENESIS).when("module.register", { manifest: broker });
    outcome.then([{ type: "ModuleRegistered", manifest: Manifest.parse(broker) }], { kind: "module", id: "broker" });
    assert.deepEqual(outcome.reply(), { module: "broker", version: "1", declares: ["mesh-broker"], claims: ["mesh-broker"] });
    assert.equal(declaredSeat(outcome.after().modules, "mesh-broker")?.declaredBy, "broker");
  });

  it("R23: refuses an unknown field, naming it", () => {
    const wat = { ...broker, seats: { "mesh-broker": { protocol: "nats", wat: true } } };
    given(GENESIS).when("module.register", { manifest: wat }).refused("invalid-manifest", "manifest.seats.mesh-broker.wat");
    given(GENESIS).when("module.register", { manifest: { ...broker, colour: "red" } }).refused("invalid-manifest", "manifest.colour");
    given(GENESIS).when("module.register", { manifest: { ...builder, follows: [{ seat: "mesh-build", event: "built", x: 1 }] } })
      .refused("invalid-manifest", "manifest.follows.0.x");
  });

  // Found by a new-user trial: `"tool": [...]` was refused as unknown with no word of `tools`.
  it("R23: an unknown field close to one the schema takes names it, at any depth", () => {
    const message = (manifest: unknown) => {
      const outcome = given(GENESIS).when("module.register", { manifest });
      assert.ok(!outcome.decision.ok);
      return outcome.decision.refusal.message;
    };
    assert.match(message({ ...broker, tool: [] }), /unknown field "manifest\.tool": did you mean "tools"\?/);
    assert.match(message({ ...builder, seats: { "mesh-build": { protocol: "p", accept: ["build"] } } }), /unknown field "manifest\.seats\.mesh-build\.accept": did you mean "accepts"\?/);
    assert.match(message({ ...builder, follows: [{ seat: "mesh-build", event: "built", seats: 1 }] }), /"manifest\.follows\.0\.seats": did you mean "seat"\?/);
    assert.match(message({ ...broker, colour: "red" }), /unknown field "manifest\.colour": remove it, the schema is strict/);
    // A required field missing beside an unknown one: the unknown one is the misspelling named.
    assert.match(message({ ...builder, follows: [{ seat: "mesh-build", evnt: "built" }] }), /unknown field "manifest\.follows\.0\.evnt": did you mean "event"\?/);
    assert.match(message({ ...builder, follows: [{ seat: "mesh-build" }] }), /"manifest\.follows\.0\.event" is missing: it is required/);
  });

  it("R23: refuses a wrong type, a bad name and a missing manifest, naming the field", () => {
    given(GENESIS).when("module.register", { manifest: { ...broker, version: 2 } }).refused("invalid-manifest", "manifest.version");
    given(GENESIS).when("module.register", { manifest: { ...broker, claims: "mesh-broker" } }).refused("invalid-manifest", "manifest.claims");
    given(GENESIS).when("module.register", { manifest: { ...broker, name: "Broker" } }).refused("invalid-manifest", "manifest.name");
    given(GENESIS).when("module.register", {}).refused("invalid-request", "manifest");
    given(GENESIS).when("module.register", { manifest: null }).refused("invalid-manifest", "manifest");
    given(GENESIS).when("module.register", { manifest: broker, extra: 1 }).refused("invalid-request", "extra");
  });

  // Found by a new-user trial: ["node", "hello.mjs"] was registered, pushed "applied", and the
  // module crashed in a loop, as the agent runs the command in the module's own folder.
  it("R72: refuses a run.command that names a program or a script by a relative path, naming the argument", () => {
    const hello = (command: string[]) => ({ name: "hello", version: "1", run: { command } });
    const refused = given(GENESIS).when("module.register", { manifest: hello(["node", "hello.mjs"]) });
    refused.refused("relative-path", "manifest.run.command.1");
    assert.ok(!refused.decision.ok);
    assert.match(refused.decision.refusal.message, /"hello\.mjs" is a relative path: the agent runs the command in the module's own folder/);
    given(GENESIS).when("module.register", { manifest: hello(["./serve", "--port", "80"]) }).refused("relative-path", "manifest.run.command.0");
    given(GENESIS).when("module.register", { manifest: hello(["python3", "app/main.py"]) }).refused("relative-path", "manifest.run.command.1");
    // A program on the node's PATH, absolute paths, options and words that are no script's path are run as written.
    for (const command of [["node", "/srv/hello/hello.mjs"], ["mesh-greeter"], ["/usr/bin/env", "python3", "-m", "app"], ["node", "--require=./x.js", "/a.js"], ["tool", "search/query"]]) {
      given(GENESIS).when("module.register", { manifest: hello(command) }).then([{ type: "ModuleRegistered", manifest: Manifest.parse(hello(command)) }], { kind: "module", id: "hello" });
    }
  });

  it("R24: accepts a marker seat (empty protocol) as written", () => {
    const filter = { name: "packet-filter", version: "1", seats: { "packet-filter": { protocol: "", scope: "node" } }, claims: ["packet-filter"] };
    const outcome = given(GENESIS).when("module.register", { manifest: filter });
    outcome.then([registration(filter)]);
    assert.equal(declaredSeat(outcome.after().modules, "packet-filter")?.protocol, "");
  });

  it("R24: accepts a use of a marker seat", () => {
    const filter = { name: "packet-filter", version: "1", seats: { "packet-filter": { protocol: "" } }, claims: ["packet-filter"] };
    const user = { name: "firewall-ui", version: "1", uses: ["packet-filter"] };
    given(GENESIS, registration(filter)).when("module.register", { manifest: user }).then([registration(user)]);
  });

  it("R25: refuses a claim on a seat nobody declared (unknown-seat)", () => {
    const claimer = { name: "claimer", version: "1", claims: ["mesh-store"] };
    given(GENESIS).when("module.register", { manifest: claimer }).refused("unknown-seat", "manifest.claims.0");
  });

  it("R25: refuses a use of a seat nobody declared (unknown-seat)", () => {
    given(GENESIS).when("module.register", { manifest: { name: "user", version: "1", uses: ["mesh-build"] } }).refused("unknown-seat", "manifest.uses.0");
  });

  // Found by a module author's trial: `uses: ["sqaures"]` named no seat it might have meant.
  it("R25: an unknown seat close to a declared one names it", () => {
    const outcome = given(GENESIS, registration(builder)).when("module.register", { manifest: { name: "user", version: "1", uses: ["mesh-biuld"] } });
    outcome.refused("unknown-seat", "manifest.uses.0");
    assert.ok(!outcome.decision.ok);
    assert.match(outcome.decision.refusal.message, /seat "mesh-biuld" is declared neither by this manifest nor by any registered module \(did you mean mesh-build\?\)/);
  });

  it("R25: refuses a follow of a seat nobody declared (unknown-seat)", () => {
    const follower = { name: "follower", version: "1", follows: [{ seat: "mesh-build", event: "built" }] };
    given(GENESIS).when("module.register", { manifest: follower }).refused("unknown-seat", "manifest.follows.0.seat");
  });

  it("R25: accepts a claim on a seat another registered module declares", () => {
    const second = { name: "broker-two", version: "1", claims: ["mesh-broker"] };
    given(GENESIS, registration(broker)).when("module.register", { manifest: second }).then([registration(second)]);
  });

  it("R25 R27: resolves a claim, a use and a follow through a seat alias", () => {
    const showcase = { name: "showcase", version: "1", uses: ["old-build"], claims: ["old-build"], follows: [{ seat: "old-build", event: "built" }] };
    given(GENESIS, registration(builder), { type: "SeatAliased", from: "old-build", to: "mesh-build" })
      .when("module.register", { manifest: showcase })
      .then([registration(showcase)]);
  });

  it("refuses declaring a seat another module declares (seat-declared-elsewhere)", () => {
    const rival = { name: "rival", version: "1", seats: { "mesh-broker": { protocol: "nats" } } };
    given(GENESIS, registration(broker)).when("module.register", { manifest: rival }).refused("seat-declared-elsewhere", "manifest.seats.mesh-broker");
  });

  it("R27: refuses declaring a seat under a name that is an alias (seat-is-alias)", () => {
    const shadow = { name: "shadow", version: "1", seats: { "old-build": { protocol: "" } } };
    given(GENESIS, registration(builder), { type: "SeatAliased", from: "old-build", to: "mesh-build" })
      .when("module.register", { manifest: shadow })
      .refused("seat-is-alias", "manifest.seats.old-build");
  });

  it("R26: a seat may share its name with its provision", () => {
    const git = { name: "git", version: "1", seats: { git: { protocol: "git", provides: "git" } }, claims: ["git"] };
    const outcome = given(GENESIS).when("module.register", { manifest: git });
    outcome.then([registration(git)]);
    assert.equal(declaredSeat(outcome.after().modules, "git")?.provides, "git");
  });

  it("refuses a follow of an event its seat does not emit (unknown-event)", () => {
    const follower = { name: "follower", version: "1", follows: [{ seat: "mesh-build", event: "failed" }] };
    given(GENESIS, registration(builder)).when("module.register", { manifest: follower }).refused("unknown-event", "manifest.follows.0.event");
  });

  it("accepts a follow of an event the manifest's own seat emits", () => {
    const self = { ...builder, follows: [{ seat: "mesh-build", event: "built" }] };
    given(GENESIS).when("module.register", { manifest: self }).then([registration(self)]);
  });

  it("accepts a new version of a module, replacing its seats", () => {
    const v2 = { ...builder, version: "2", seats: { "mesh-build": { protocol: "mesh-work", accepts: ["build", "test"], emits: ["built"] } } };
    const outcome = given(GENESIS, registration(builder)).when("module.register", { manifest: v2 });
    outcome.then([{ type: "ModuleRegistered", manifest: Manifest.parse(v2), replaces: "1" }]);
    assert.deepEqual(declaredSeat(outcome.after().modules, "mesh-build")?.accepts, ["build", "test"]);
    assert.deepEqual(outcome.reply(), { module: "builder", version: "2", declares: ["mesh-build"], claims: ["mesh-build"], replaced: "1" });
  });

  it("re-registering an identical manifest is accepted unchanged: no events", () => {
    const outcome = given(GENESIS, registration(builder)).when("module.register", { manifest: builder });
    outcome.unchanged({ kind: "module", id: "builder" });
    assert.deepEqual(outcome.reply(), { module: "builder", version: "1", declares: ["mesh-build"], claims: ["mesh-build"] });
  });

  it("identical means the parsed manifest: key order and spelled-out defaults do not matter", () => {
    const reordered = { claims: ["mesh-build"], uses: [], seats: builder.seats, version: "1", name: "builder" };
    given(GENESIS, registration(builder)).when("module.register", { manifest: reordered }).unchanged();
  });

  it("refuses a changed manifest under the registered version (version-exists)", () => {
    const changed = { ...builder, seats: { "mesh-build": { protocol: "mesh-work", accepts: ["build", "test"], emits: ["built"] } } };
    given(GENESIS, registration(builder)).when("module.register", { manifest: changed }).refused("version-exists", "manifest.version");
  });

  it("given/when/then: unchanged() fails on a decision with events, then() fails on an unchanged one", () => {
    assert.throws(() => given(GENESIS).when("module.register", { manifest: builder }).unchanged());
    assert.throws(() => given(GENESIS, registration(builder)).when("module.register", { manifest: builder }).then([]));
  });

  it("refuses a new version that drops a seat another module still uses (seat-in-use)", () => {
    const showcase = { name: "showcase", version: "1", uses: ["mesh-build"] };
    const v2 = { name: "builder", version: "2", seats: { "builder-two": { protocol: "" } } };
    given(GENESIS, registration(builder), registration(showcase)).when("module.register", { manifest: v2 }).refused("seat-in-use", "manifest.seats");
  });

  it("R49: a new version of the broker's module that no longer claims mesh-broker, while it is the seat's only holder, is refused", () => {
    const assigned = [GENESIS, ...enrolment("alpha"), registration(broker), { type: "ModuleAssigned" as const, module: "broker", node: "alpha" }];
    const v2 = { ...broker, version: "2", claims: [] };
    given(...assigned).when("module.register", { manifest: v2 }).refused("last-broker-holder", "manifest.claims");
    // Unassigned, nothing holds the seat to lose.
    given(GENESIS, registration(broker)).when("module.register", { manifest: v2 }).then([{ type: "ModuleRegistered", manifest: Manifest.parse(v2), replaces: "1" }]);
  });

  it("R25: refuses a new version claiming a seat only its old version declared (unknown-seat)", () => {
    const v2 = { name: "builder", version: "2", claims: ["mesh-build"] };
    given(GENESIS, registration(builder)).when("module.register", { manifest: v2 }).refused("unknown-seat", "manifest.claims.0");
  });
});
