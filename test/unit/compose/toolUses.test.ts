import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { controllerReplyInboxes, explain, grantsOf, moduleEnvironment, permissionsOf } from "../../../src/compose/index.ts";
import { Manifest, toolUseOf, usedSeats } from "../../../src/manifest/manifest.ts";
import { given, GENESIS, registration } from "../../support/givenWhenThen.ts";
import { busUser, inboxSubjects, toolSubject, workSubject } from "../../../src/names.ts";
import { registrationOrder } from "../../../src/manifest/order.ts";
import { EXAMPLE_CONFIG, MeshBuilder, manifests } from "./exampleMesh.ts";

/** R74: a module calls another module's tool only through a `uses` line `<module>/<tool>` of its manifest. */

const search = { name: "search", version: "1", tools: [{ name: "query" }, { name: "reindex" }] };
const caller = { name: "caller", version: "1", uses: ["mesh-build", "search/query"] };
const caller_only = { name: "caller", version: "1", uses: ["search/query"] };

function mesh() {
  return new MeshBuilder().genesis().controller().operator("ada").register(manifests["build-machine"])
    .register(search).register(caller).register({ name: "bystander", version: "1" })
    .issue("search").issue("caller").issue("bystander").state();
}

describe("R74: a module may use another module's tool", () => {
  it("R74: the manifest reads a tool use as <module>/<tool> beside seat uses, and refuses any other form naming the entry", () => {
    const parsed = Manifest.parse(caller);
    assert.deepEqual(usedSeats(parsed), ["mesh-build"]);
    assert.deepEqual(toolUseOf("search/query"), { module: "search", tool: "query" });
    assert.equal(toolUseOf("mesh-build"), null);
    for (const bad of ["search/", "/query", "a/b/c", "Search/query", "search query"]) {
      const result = Manifest.safeParse({ ...caller, uses: ["mesh-build", bad] });
      assert.equal(result.success, false, bad);
      assert.deepEqual(result.error!.issues[0]!.path, ["uses", 1], bad);
      assert.match(result.error!.issues[0]!.message, /<module>\/<tool>/);
    }
  });

  it("R74: registration refuses a use of a tool whose module is not registered, or that the module does not offer, naming the entry", () => {
    given(GENESIS).when("module.register", { manifest: { name: "caller", version: "1", uses: ["search/query"] } })
      .refused("unknown-tool", "manifest.uses.0");
    given(GENESIS, registration(search)).when("module.register", { manifest: { name: "caller", version: "1", uses: ["search/nothing"] } })
      .refused("unknown-tool", "manifest.uses.0");
    const ok = { name: "caller", version: "1", uses: ["search/query"] };
    given(GENESIS, registration(search)).when("module.register", { manifest: ok }).then([registration(ok)]);
  });

  it("R74: a new version that drops a tool another module uses is refused (tool-in-use), naming the tools field", () => {
    const dropped = { ...search, version: "2", tools: [{ name: "reindex" }] };
    given(GENESIS, registration(search), registration(caller_only)).when("module.register", { manifest: dropped }).refused("tool-in-use", "manifest.tools");
    const kept = { ...search, version: "2", tools: [{ name: "query" }] };
    given(GENESIS, registration(search), registration(caller_only)).when("module.register", { manifest: kept }).then([{ type: "ModuleRegistered", manifest: Manifest.parse(kept), replaces: "1" }]);
  });

  it("R74: the grant is exact: publish on that tool's subject alone; a module without the use gets none", () => {
    const state = mesh();
    const p = permissionsOf(state, { kind: "module", name: "caller" }, EXAMPLE_CONFIG);
    assert.deepEqual(p.publish.allow, [workSubject("mesh-build", "build"), toolSubject("search", "query")].sort());
    assert.deepEqual(p.subscribe.allow, [inboxSubjects(busUser("module", "caller"))], "its replies arrive on its own inbox (R33)");
    assert.equal(p.allow_responses, undefined, "calling a tool answers nothing");
    const other = permissionsOf(state, { kind: "module", name: "bystander" }, EXAMPLE_CONFIG);
    assert.deepEqual(other.publish.allow, []);
    const callee = permissionsOf(state, { kind: "module", name: "search" }, EXAMPLE_CONFIG);
    // An attacker's trial: with allow_responses a caller aimed the answer at the records. The
    // tool's module answers on its callers' inboxes alone: the caller's and the operators'.
    assert.equal(callee.allow_responses, undefined);
    assert.deepEqual(callee.publish.allow.filter((s) => s.startsWith("_INBOX")), [inboxSubjects(busUser("module", "caller")), ...controllerReplyInboxes(state)].sort());
  });

  it("R74: mesh explain names the manifest line that grants the tool, and denies the tool not used", () => {
    const state = mesh();
    const allowed = explain(state, { kind: "module", name: "caller" }, "pub", toolSubject("search", "query"), EXAMPLE_CONFIG);
    assert.equal(allowed.allowed, true);
    assert.match(allowed.because[0]!.because, /manifest of caller: uses\[1\] "search\/query"/);
    const denied = explain(state, { kind: "module", name: "caller" }, "pub", toolSubject("search", "reindex"), EXAMPLE_CONFIG);
    assert.equal(denied.allowed, false);
    const grants = grantsOf(state, { kind: "module", name: "caller" }, EXAMPLE_CONFIG).grants;
    assert.equal(grants.filter((g) => g.subject.startsWith("mesh.tool.")).length, 1);
  });

  it("R74: operators may still call any tool", () => {
    const p = permissionsOf(mesh(), { kind: "operator", name: "ada" }, EXAMPLE_CONFIG);
    for (const tool of ["query", "reindex"]) assert.ok(p.publish.allow.includes(toolSubject("search", tool)), tool);
  });

  it("R74 R57: the caller's environment names the tools it may call and their subjects", () => {
    const env = moduleEnvironment(mesh(), "caller", "tls://bus:4222", busUser("module", "caller"), "AA");
    assert.deepEqual(JSON.parse(env.MESH_CALLS!), [{ module: "search", tool: "query", subject: toolSubject("search", "query") }]);
    assert.deepEqual(JSON.parse(env.MESH_SUBMITS), [{ seat: "mesh-build", kind: "build", subject: workSubject("mesh-build", "build") }], "a tool use is no seat use");
  });

  it("R74: several manifests register the tool's module before the module that uses it", () => {
    const order = registrationOrder([{ manifest: caller }, { manifest: manifests["build-machine"] }, { manifest: search }]);
    assert.deepEqual(order.map((i) => i.manifest.name), ["build-machine", "search", "caller"]);
  });
});
