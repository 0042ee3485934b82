import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { controllerReplyInboxes, grantsOf, permissionsFromGrants, permissionsOf, type Permissions } from "../../../src/compose/index.ts";
import {
  ALL_SUBJECTS, CONTROLLER_NAME, CONTROL_STREAM, EVENTS_STREAM, JS_API_SUBJECTS, SHARED_INBOX_SUBJECTS, busUser,
  declarationConsumer, eventSubject, followConsumer, inboxSubjects, pullGrants, reportSubject, toolSubject,
  workConsumer, workStream, workSubject, COMMAND_SUBJECTS, commandSubject, commandSubjects, LOGS_SUBJECTS, logsSubject, MICRO_REQUEST_SUBJECTS, microServiceSubjects, CATALOGUE_SUBJECTS, REPORT_SUBJECTS,
} from "../../../src/names.ts";
import type { Principal } from "../../../src/events/index.ts";
import { EXAMPLE_CONFIG, MeshBuilder, exampleMesh, manifests } from "./exampleMesh.ts";

const { state } = exampleMesh();
const all = (p: Permissions) => [...p.publish.allow, ...p.subscribe.allow];
const perms = (principal: Principal) => permissionsOf(state, principal, EXAMPLE_CONFIG);
const principals: Principal[] = [
  { kind: "controller", name: CONTROLLER_NAME }, { kind: "operator", name: "ada" }, { kind: "builder", name: "ci" },
  ...["alpha", "beta", "gamma"].map((name) => ({ kind: "node" as const, name })),
  ...Object.keys(manifests).filter((m) => m !== CONTROLLER_NAME).map((name) => ({ kind: "module" as const, name })),
];

describe("permissions per principal", () => {
  it("R33: no principal is granted >, _INBOX.> or a subscription on any inbox but its own; only responders publish to inboxes, each named exactly", () => {
    for (const principal of principals) {
      const p = perms(principal);
      const own = inboxSubjects(busUser(principal.kind, principal.name));
      assert.ok(!all(p).includes(ALL_SUBJECTS), `${principal.name} has >`);
      assert.ok(!all(p).includes(SHARED_INBOX_SUBJECTS), `${principal.name} has _INBOX.>`);
      assert.deepEqual(p.subscribe.allow.filter((s) => s.startsWith("_INBOX")), [own], principal.name);
      // The controller, the nodes (mesh logs) and the modules with tools answer the operator ada.
      const tools = principal.kind === "module" ? (manifests[principal.name as keyof typeof manifests] as { tools?: unknown[] }).tools ?? [] : [];
      const answers = principal.kind === "controller" || principal.kind === "node" || tools.length > 0;
      const replies = answers ? [inboxSubjects(busUser("operator", "ada"))] : [];
      assert.deepEqual(p.publish.allow.filter((s) => s.startsWith("_INBOX")), replies, `${principal.name} publishes to an inbox`);
      assert.equal(p.allow_responses, undefined, `${principal.name}: never allow_responses`);
    }
  });

  it("R33: the controller replies by explicit grants on the inbox of every operator with a credential, not by allow_responses (a reload forgets it)", () => {
    const b = new MeshBuilder().genesis().controller().operator("ada").operator("bob").node("alpha").builder("ci")
      .register(manifests.showcase).issue("showcase");
    const mesh = b.state();
    assert.deepEqual(controllerReplyInboxes(mesh), [inboxSubjects("operator-ada"), inboxSubjects("operator-bob")]);
    const p = permissionsOf(mesh, { kind: "controller", name: CONTROLLER_NAME }, EXAMPLE_CONFIG);
    assert.deepEqual(p.publish.allow.filter((s) => s.startsWith("_INBOX")), controllerReplyInboxes(mesh));
    assert.equal(p.allow_responses, undefined);
    // an operator without a credential is not on the bus: no grant on its inbox
    const bare = new MeshBuilder().genesis().controller().state();
    assert.deepEqual(controllerReplyInboxes(bare), []);
    // An attacker's trial: allow_responses let a tool's caller aim the answer at any subject. A
    // module answers its tools on the inboxes of those who may call them, named exactly.
    const showcase = permissionsOf(mesh, { kind: "module", name: "showcase" }, EXAMPLE_CONFIG);
    assert.equal(showcase.allow_responses, undefined);
    assert.deepEqual(showcase.publish.allow.filter((s) => s.startsWith("_INBOX")), controllerReplyInboxes(mesh));
  });

  it("R33: the guard refuses a publish on another's inbox except the controller's reply grants, and any subscription on one", () => {
    const grant = (direction: "pub" | "sub", subject: string) => ({ direction, subject, because: "test" });
    const operatorInbox = inboxSubjects("operator-ada");
    const controller = busUser("controller", CONTROLLER_NAME);
    assert.doesNotThrow(() => permissionsFromGrants([grant("pub", operatorInbox)], controller, [operatorInbox]));
    assert.throws(() => permissionsFromGrants([grant("pub", operatorInbox)], controller), Error);
    assert.throws(() => permissionsFromGrants([grant("pub", inboxSubjects("node-alpha"))], controller, [operatorInbox]), Error);
    assert.throws(() => permissionsFromGrants([grant("sub", operatorInbox)], controller, [operatorInbox]), Error);
    assert.throws(() => permissionsFromGrants([grant("pub", SHARED_INBOX_SUBJECTS)], controller, [SHARED_INBOX_SUBJECTS]), Error);
    assert.throws(() => permissionsFromGrants([grant("pub", ALL_SUBJECTS)], controller, [ALL_SUBJECTS]), Error);
  });

  it("R2 R72: a node pulls its own CONTROL consumer only, reports on its own subject, answers its own logs subject, and has nothing else", () => {
    const p = perms({ kind: "node", name: "beta" });
    assert.deepEqual(p.publish.allow, [...pullGrants(CONTROL_STREAM, declarationConsumer("beta")).publish, reportSubject("beta"), inboxSubjects("operator-ada")].sort());
    assert.deepEqual(p.subscribe.allow, [inboxSubjects(busUser("node", "beta")), logsSubject("beta")].sort());
    assert.equal(p.allow_responses, undefined, "it answers `mesh logs` on the operators' inboxes alone, never where a request says");
  });

  it("R2: the node holding mesh-broker gets nothing extra on the bus", () => {
    const alpha = perms({ kind: "node", name: "alpha" });
    assert.deepEqual(alpha.publish.allow, [...pullGrants(CONTROL_STREAM, declarationConsumer("alpha")).publish, reportSubject("alpha"), inboxSubjects("operator-ada")].sort());
  });

  it("R4: a module pulls exactly the consumers its manifest implies, submits only what it uses, answers its tools", () => {
    const p = perms({ kind: "module", name: "showcase" });
    assert.deepEqual(p.publish.allow, [
      ...pullGrants(EVENTS_STREAM, followConsumer("showcase", "mesh-build", "built")).publish,
      workSubject("mesh-build", "build"),
      inboxSubjects("operator-ada"),
    ].sort());
    assert.deepEqual(p.subscribe.allow, [inboxSubjects("module-showcase"), toolSubject("showcase", "hello")].sort());
    assert.equal(p.allow_responses, undefined, "it answers its tool on the operators' inboxes alone");
    // it follows `built`: it is delivered by its consumer, never by a core subscription of the event
    assert.ok(!p.subscribe.allow.includes(eventSubject("mesh-build", "built")));
  });

  it("R16: the holder of a seat that accepts work pulls the queue shared by all holders and publishes its events", () => {
    const p = perms({ kind: "module", name: "build-machine" });
    assert.deepEqual(p.publish.allow, [
      ...pullGrants(workStream("mesh-build"), workConsumer("mesh-build")).publish,
      eventSubject("mesh-build", "built"),
    ].sort());
    // a second module claiming the same seat shares the same consumer
    const b = new MeshBuilder().genesis();
    for (const m of Object.values(manifests)) b.register(m);
    b.register({ name: "build-two", version: "1", claims: ["mesh-build"] });
    const two = permissionsOf(b.state(), { kind: "module", name: "build-two" }, EXAMPLE_CONFIG);
    assert.ok(two.publish.allow.includes(pullGrants(workStream("mesh-build"), workConsumer("mesh-build")).publish[1]!));
  });

  it("R24: a module holding only a marker seat gets its inbox and nothing else", () => {
    const p = perms({ kind: "module", name: "packet-filter" });
    assert.deepEqual(p, { publish: { allow: [] }, subscribe: { allow: [inboxSubjects("module-packet-filter")] } });
  });

  it("R15 R19: the controller submits only the work of its stated seats and hears their outcomes named exactly", () => {
    const p = perms({ kind: "controller", name: CONTROLLER_NAME });
    assert.ok(p.publish.allow.includes(workSubject("mesh-build", "build")));
    assert.ok(p.subscribe.allow.includes(eventSubject("mesh-build", "built")));
    assert.ok(!p.publish.allow.includes(workSubject("artifacts", "store")), "artifacts is not in its submit list");
    assert.ok(!p.publish.allow.some((s) => s.startsWith("$JS.API.CONSUMER.MSG.NEXT")), "never the holders' half");
    assert.ok(p.subscribe.allow.includes(COMMAND_SUBJECTS));
    assert.equal(p.allow_responses, undefined, "it answers by explicit grants on its operators' inboxes (R33)");
    const none = permissionsOf(state, { kind: "controller", name: CONTROLLER_NAME }, { controllerSubmits: [] });
    assert.ok(!none.publish.allow.includes(workSubject("mesh-build", "build")));
    assert.ok(!none.subscribe.allow.includes(eventSubject("mesh-build", "built")));
  });

  it("R15: only the controller is granted the JetStream API beyond its own consumers", () => {
    for (const principal of principals) {
      const js = all(perms(principal)).filter((s) => s.startsWith("$JS.API"));
      if (principal.kind === "controller") assert.ok(js.includes(JS_API_SUBJECTS));
      else for (const s of js) assert.ok(/^\$JS\.API\.CONSUMER\.(INFO|MSG\.NEXT)\.[A-Z_]+\.[a-z0-9_-]+$/.test(s), `${principal.name}: ${s}`);
    }
  });

  it("an operator's tool grants are every registered tool, whatever the order of registration; mesh explain lists them by module name", () => {
    const names = ["mod-c", "mod-a", "mod-e", "mod-b", "mod-d"];
    let b = new MeshBuilder().genesis();
    for (const name of names) b = b.register({ name, version: "1", tools: [{ name: "t" }] });
    const operator = { kind: "operator" as const, name: "ada" };
    const tools = [...names].sort().map((name) => toolSubject(name, "t"));
    assert.deepEqual(permissionsOf(b.state(), operator, EXAMPLE_CONFIG).publish.allow, [commandSubjects("operator-ada"), LOGS_SUBJECTS, MICRO_REQUEST_SUBJECTS, ...tools].sort());
    const explained = grantsOf(b.state(), operator, EXAMPLE_CONFIG).grants.map((g) => g.subject).filter((s) => tools.includes(s));
    assert.deepEqual(explained, tools);
  });

  it("R33 R51 R72: an operator publishes commands under its own name only, named tools, nodes' logs questions and services-protocol requests, subscribes its inbox, and has nothing of $JS", () => {
    const p = perms({ kind: "operator", name: "ada" });
    assert.deepEqual(p.publish.allow, [commandSubjects("operator-ada"), LOGS_SUBJECTS, MICRO_REQUEST_SUBJECTS, toolSubject("showcase", "hello")].sort());
    for (const principal of principals) {
      const published = perms(principal).publish.allow.filter((s) => s.startsWith(commandSubject("x", "y").split(".").slice(0, 2).join(".") + "."));
      const user = principal.kind === "controller" ? "" : `${principal.kind}-${principal.name}`;
      assert.deepEqual(published, principal.kind === "operator" ? [commandSubjects(user)] : [], `${principal.kind} ${principal.name} publishes commands under its own name only`);
    }
    assert.deepEqual(p.subscribe.allow, [inboxSubjects("operator-ada"), CATALOGUE_SUBJECTS, REPORT_SUBJECTS].sort());
    assert.ok(!all(p).some((s) => s.startsWith("$") && s !== MICRO_REQUEST_SUBJECTS));
  });

  it("discovery: operators alone may ask the services protocol ($SRV.>), and the controller alone subscribes its own $SRV subjects", () => {
    const answered = microServiceSubjects(CONTROLLER_NAME);
    for (const principal of principals) {
      const p = perms(principal);
      const asks = p.publish.allow.filter((s) => s.startsWith("$SRV"));
      const hears = p.subscribe.allow.filter((s) => s.startsWith("$SRV"));
      assert.deepEqual(asks, principal.kind === "operator" ? [MICRO_REQUEST_SUBJECTS] : [], `${principal.kind} ${principal.name} asks`);
      assert.deepEqual(hears, principal.kind === "controller" ? [...answered].sort() : [], `${principal.kind} ${principal.name} hears`);
    }
    const explained = grantsOf(state, { kind: "controller", name: CONTROLLER_NAME }, EXAMPLE_CONFIG).grants.filter((g) => g.subject.startsWith("$SRV"));
    assert.ok(explained.every((g) => g.direction === "sub" && g.because.length > 0));
  });

  it("issue 29: an operator hears the records as they are appended and the nodes' reports (mesh ... --watch), and publishes on neither", () => {
    const p = perms({ kind: "operator", name: "ada" });
    assert.ok(p.subscribe.allow.includes(CATALOGUE_SUBJECTS));
    assert.ok(p.subscribe.allow.includes(REPORT_SUBJECTS));
    assert.ok(!p.publish.allow.some((s) => s.startsWith("mesh.catalogue.") || s.startsWith("mesh.report.")));
    for (const principal of principals.filter((x) => x.kind === "node" || x.kind === "module" || x.kind === "builder")) {
      assert.ok(!perms(principal).subscribe.allow.includes(CATALOGUE_SUBJECTS), `${principal.kind} ${principal.name} does not hear the records`);
    }
  });

  it("R20: a builder submits mesh-build work and hears its outcome, like any submitter of a role", () => {
    const p = perms({ kind: "builder", name: "ci" });
    assert.deepEqual(p.publish.allow, [workSubject("mesh-build", "build")]);
    assert.deepEqual(p.subscribe.allow, [inboxSubjects("builder-ci"), eventSubject("mesh-build", "built")].sort());
  });

  it("R20: a role that accepts work gives its holder a queue the same way as any seat", () => {
    const b = new MeshBuilder().genesis()
      .register({ name: CONTROLLER_NAME, version: "1", seats: { "the-controller": { protocol: "p", accepts: ["audit"], emits: ["audited"] } }, claims: ["the-controller"] });
    const p = permissionsOf(b.state(), { kind: "controller", name: CONTROLLER_NAME }, { controllerSubmits: [] });
    for (const s of pullGrants(workStream("the-controller"), workConsumer("the-controller")).publish) assert.ok(p.publish.allow.includes(s), s);
    assert.ok(p.publish.allow.includes(eventSubject("the-controller", "audited")));
  });

  it("R27: seat names resolve through aliases at every lookup", () => {
    const b = new MeshBuilder().genesis()
      .register({ name: "old-builder", version: "1", seats: { "old-build": { protocol: "b", accepts: ["build"] } }, claims: ["old-build"] })
      .register({ name: "new-builder", version: "1", seats: { "new-build": { protocol: "b", accepts: ["compile"] } }, claims: ["new-build"] })
      .register({ name: "client", version: "1", uses: ["old-build"], follows: [{ seat: "old-build", event: "done" }] })
      .alias("old-build", "new-build");
    const p = permissionsOf(b.state(), { kind: "module", name: "client" }, EXAMPLE_CONFIG);
    assert.ok(p.publish.allow.includes(workSubject("new-build", "compile")));
    assert.ok(!p.publish.allow.some((s) => s.includes("old-build")));
    assert.ok(p.publish.allow.includes(pullGrants(EVENTS_STREAM, followConsumer("client", "new-build", "done")).publish[0]!));
  });

  it("R18: a module may not publish the events of a seat it does not claim nor pull another's consumer", () => {
    const p = perms({ kind: "module", name: "showcase" });
    assert.ok(!p.publish.allow.includes(eventSubject("mesh-build", "built")));
    assert.ok(!p.publish.allow.some((s) => s.includes(workConsumer("mesh-build"))));
  });

  it("R2: permissions are sorted and deduplicated, and the same records give the same permissions", () => {
    for (const principal of principals) {
      const p = perms(principal);
      for (const list of [p.publish.allow, p.subscribe.allow]) assert.deepEqual(list, [...new Set(list)].sort());
      assert.deepEqual(perms(principal), p);
    }
  });
});
