import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { explain, covers } from "../../../src/compose/index.ts";
import { eventSubject, inboxSubjects, workSubject, toolSubject } from "../../../src/names.ts";
import { EXAMPLE_CONFIG, MeshBuilder, exampleMesh } from "./exampleMesh.ts";

describe("explain", () => {
  const { state } = exampleMesh();

  it("R4: names the manifest line that allows a grant", () => {
    const e = explain(state, { kind: "module", name: "showcase" }, "pub", workSubject("mesh-build", "build"), EXAMPLE_CONFIG);
    assert.equal(e.allowed, true);
    assert.match(e.because[0]!.because, /manifest of showcase: uses mesh-build/);
    assert.equal(e.onTheBus, true);
  });

  it("R33: says why nothing allows another's inbox or an unfollowed event", () => {
    const inbox = explain(state, { kind: "module", name: "showcase" }, "sub", inboxSubjects("operator-ada"), EXAMPLE_CONFIG);
    assert.equal(inbox.allowed, false);
    assert.ok(inbox.reason);
    // It answers its tool on the operator's inbox, and on no other inbox.
    assert.equal(explain(state, { kind: "module", name: "showcase" }, "pub", "_INBOX_operator-ada.abc", EXAMPLE_CONFIG).allowed, true);
    const reply = explain(state, { kind: "module", name: "showcase" }, "pub", "_INBOX_node-alpha.abc", EXAMPLE_CONFIG);
    assert.equal(reply.allowed, false);
    assert.match(reply.reason!, /answers requests only on the inboxes of those who may ask it/);
    const event = explain(state, { kind: "module", name: "build-machine" }, "sub", eventSubject("mesh-build", "built"), EXAMPLE_CONFIG);
    assert.equal(event.allowed, false);
  });

  it("R12: a principal without a credential is explained as not on the bus", () => {
    const b = new MeshBuilder().genesis().register({ name: "t", version: "1", tools: [{ name: "x" }] });
    const e = explain(b.state(), { kind: "module", name: "t" }, "sub", toolSubject("t", "x"), EXAMPLE_CONFIG);
    assert.equal(e.allowed, true);
    assert.equal(e.onTheBus, false);
  });

  it("R33: wildcards match as the server checks them", () => {
    assert.ok(covers("a.>", "a.b.c"));
    assert.ok(!covers("a.>", "a"));
    assert.ok(covers("a.*.c", "a.b.c"));
    assert.ok(!covers("a.b.c", "a.*.c"));
    assert.ok(!covers("a.*", "a.>"));
    assert.ok(covers(">", "a.>"));
    assert.ok(!covers("a.b", "a.b.c"));
  });
});
