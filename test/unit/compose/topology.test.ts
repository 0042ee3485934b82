import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { composeTopology, covers } from "../../../src/compose/index.ts";
import {
  CATALOGUE_STREAM, CONTROL_STREAM, EVENTS_STREAM, declarationConsumer, declarationFilter, declarationSubject, eventSubject, followConsumer,
  userListPartSubject, workConsumer, workStream,
} from "../../../src/names.ts";
import { EXAMPLE_CONFIG, MeshBuilder, exampleMesh, manifests } from "./exampleMesh.ts";

describe("the bus topology", () => {
  const { state } = exampleMesh();
  const topology = composeTopology(state, EXAMPLE_CONFIG);

  it("R42: the records stream denies delete and purge", () => {
    const catalogue = topology.streams.find((s) => s.name === CATALOGUE_STREAM)!;
    assert.equal(catalogue.deny_delete, true);
    assert.equal(catalogue.deny_purge, true);
    assert.equal(catalogue.storage, "file");
    assert.equal(catalogue.retention, "limits");
  });

  it("R22: one CONTROL consumer per enrolled node, bound to its own subjects alone, never dead-lettering", () => {
    const control = topology.consumers.filter((c) => c.stream === CONTROL_STREAM);
    assert.deepEqual(control.map((c) => c.config.durable_name), ["alpha", "beta", "gamma"].map(declarationConsumer));
    for (const node of ["alpha", "beta", "gamma"]) {
      const c = control.find((x) => x.config.durable_name === declarationConsumer(node))!;
      assert.equal(c.config.filter_subject, declarationFilter(node));
      assert.equal(c.config.max_deliver, -1);
      // Its filter takes its declaration and its user-list parts, and nothing of another node's.
      assert.ok(covers(c.config.filter_subject!, declarationSubject(node)));
      assert.ok(covers(c.config.filter_subject!, userListPartSubject(node, 7)));
      for (const other of ["alpha", "beta", "gamma", `${node}x`].filter((n) => n !== node)) {
        assert.ok(!covers(c.config.filter_subject!, declarationSubject(other)));
        assert.ok(!covers(c.config.filter_subject!, userListPartSubject(other, 0)));
      }
      assert.equal(c.config.ack_policy, "explicit");
    }
  });

  it("R16: a seat that accepts work has its queue and one shared consumer whether or not anyone holds it", () => {
    const b = new MeshBuilder().genesis().register(manifests["build-machine"]);
    const t = composeTopology(b.state(), EXAMPLE_CONFIG);
    const stream = t.streams.find((s) => s.name === workStream("mesh-build"))!;
    assert.equal(stream.retention, "workqueue");
    assert.deepEqual(t.consumers.filter((c) => c.stream === workStream("mesh-build")).map((c) => c.config.durable_name), [workConsumer("mesh-build")]);
    // a marker seat and a seat without accepts get no queue
    assert.equal(topology.streams.filter((s) => s.retention === "workqueue").length, 2);
  });

  it("R4 R18: one EVENTS consumer per follows entry, one filter_subject each (server 2.9)", () => {
    const events = topology.consumers.filter((c) => c.stream === EVENTS_STREAM);
    assert.deepEqual(events.map((c) => c.config), [{
      durable_name: followConsumer("showcase", "mesh-build", "built"), filter_subject: eventSubject("mesh-build", "built"),
      ack_policy: "explicit", deliver_policy: "new",
    }]);
    for (const c of topology.consumers) assert.ok(!("filter_subjects" in c.config) && !("metadata" in c.config));
  });

  it("R22: every consumer's stream is in the topology, and streams come before consumers", () => {
    const names = new Set(topology.streams.map((s) => s.name));
    for (const c of topology.consumers) assert.ok(names.has(c.stream), c.stream);
    assert.deepEqual(Object.keys(topology), ["streams", "consumers"]);
  });

  it("R21: the topology is a function of the records: the same records give the same topology; replicas come from configuration", () => {
    assert.deepEqual(composeTopology(exampleMesh().state, EXAMPLE_CONFIG), topology);
    for (const s of composeTopology(state, { ...EXAMPLE_CONFIG, replicas: 3 }).streams) assert.equal(s.num_replicas, 3);
  });
});
