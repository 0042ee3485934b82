import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { AckPolicy, jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { startNatsServer, type NatsServer } from "../support/natsServer.ts";
import { busObjects } from "../support/busObjects.ts";
import { stateOf, type EventBody } from "../support/givenWhenThen.ts";
import { newRaiseMemo, raiseTopology } from "../../src/controller/raise.ts";
import { composeTopology } from "../../src/compose/topology.ts";
import { Manifest } from "../../src/manifest/manifest.ts";
import {
  CONTROL_STREAM, DEFAULT_JS_API_PREFIX, declarationConsumer, declarationFilter, declarationSubject, workConsumer, workStream,
} from "../../src/names.ts";

const builder = Manifest.parse({
  name: "builder",
  version: "1",
  seats: { "mesh-build": { protocol: "build/1", accepts: ["job"] } },
  claims: ["mesh-build"],
});
const nodes = ["alpha", "beta", "gamma"];
const state = stateOf([
  ...nodes.map((node): EventBody => ({ type: "NodeEnrolled", node, publicKey: "AAAA" })),
  { type: "ModuleRegistered", manifest: builder },
]);
const topology = composeTopology(state, { controllerSubmits: ["mesh-build"] });


describe("raiseTopology on a fresh bus", () => {
  let server: NatsServer;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  before(async () => {
    server = await startNatsServer();
    nc = await connect({ servers: server.url });
    jsm = await jetstreamManager(nc);
  });
  after(async () => {
    await nc?.close();
    await server?.stop();
  });

  it("R21 R22: raises streams then consumers; asserting twice changes nothing", async () => {
    const first = await raiseTopology(jsm, topology);
    assert.deepEqual(first.refused, []);
    assert.equal(first.created.length, topology.streams.length + topology.consumers.length);
    const before = await busObjects(jsm);

    const second = await raiseTopology(jsm, topology);
    assert.deepEqual(second.created, []);
    assert.deepEqual(second.updated, []);
    assert.deepEqual(second.refused, []);
    assert.equal(second.unchanged.length, first.created.length);
    assert.equal(await busObjects(jsm), before);
  });

  it("R22: each node's consumer is filtered on its own subjects alone and never dead-letters", async () => {
    assert.deepEqual((await raiseTopology(jsm, topology)).refused, []);
    for (const node of nodes) {
      const info = await jsm.consumers.info(CONTROL_STREAM, declarationConsumer(node));
      assert.equal(info.config.filter_subject, declarationFilter(node));
      assert.equal(info.config.max_deliver ?? -1, -1);
      assert.equal(info.config.ack_policy, AckPolicy.Explicit);
    }
    const control = await jsm.streams.info(CONTROL_STREAM);
    assert.equal(control.config.max_msgs_per_subject, 1);
  });

  it("R16: the seat's work queue and its shared consumer exist with no holder", async () => {
    assert.deepEqual((await raiseTopology(jsm, topology)).refused, []);
    const info = await jsm.consumers.info(workStream("mesh-build"), workConsumer("mesh-build"));
    assert.equal(info.config.ack_policy, AckPolicy.Explicit);
    assert.equal((await jsm.streams.info(workStream("mesh-build"))).config.retention, "workqueue");
  });
});

describe("raiseTopology never rewrites by accident", () => {
  let server: NatsServer;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  before(async () => {
    server = await startNatsServer();
    nc = await connect({ servers: server.url });
    jsm = await jetstreamManager(nc);
  });
  after(async () => {
    await nc?.close();
    await server?.stop();
  });

  it("R22: an existing durable with another filter is refused and left as it is; a work-queue conflict is a configuration error", async () => {
    // Raise the streams only, then put foreign objects where the mesh's would go.
    const streamsOnly = await raiseTopology(jsm, { streams: topology.streams, consumers: [] });
    assert.deepEqual(streamsOnly.refused, []);
    await jsm.consumers.add(CONTROL_STREAM, {
      durable_name: declarationConsumer("alpha"),
      filter_subject: declarationSubject("beta"),
      ack_policy: AckPolicy.Explicit,
    });
    await jsm.consumers.add(workStream("mesh-build"), { durable_name: "someone-else", ack_policy: AckPolicy.Explicit });

    const report = await raiseTopology(jsm, topology);
    const refused = report.refused.map((r) => r.object).sort();
    assert.deepEqual(refused, [
      `${CONTROL_STREAM}/${declarationConsumer("alpha")}`,
      `${workStream("mesh-build")}/${workConsumer("mesh-build")}`,
    ]);
    // The filter was not rewritten.
    const alpha = await jsm.consumers.info(CONTROL_STREAM, declarationConsumer("alpha"));
    assert.equal(alpha.config.filter_subject, declarationSubject("beta"));
    // The other nodes were raised all the same.
    assert.ok(report.created.includes(`${CONTROL_STREAM}/${declarationConsumer("beta")}`));
    assert.ok(report.created.includes(`${CONTROL_STREAM}/${declarationConsumer("gamma")}`));
  });

  it("R22: a consumer on a missing stream is refused naming the stream", async () => {
    const report = await raiseTopology(jsm, {
      streams: [],
      consumers: [{ stream: "NO_SUCH_STREAM", config: { durable_name: "d", ack_policy: "explicit", deliver_policy: "all" } }],
    });
    assert.equal(report.refused.length, 1);
    assert.match(report.refused[0]!.reason, /NO_SUCH_STREAM/);
  });

  it("R22: a field the mesh owns that can change in place is updated, once", async () => {
    await raiseTopology(jsm, topology); // raised here, so the test stands alone
    await jsm.consumers.update(CONTROL_STREAM, declarationConsumer("beta"), { max_deliver: 5 });
    const report = await raiseTopology(jsm, topology);
    assert.deepEqual(report.updated, [`${CONTROL_STREAM}/${declarationConsumer("beta")}`]);
    assert.equal((await jsm.consumers.info(CONTROL_STREAM, declarationConsumer("beta"))).config.max_deliver, -1);
    assert.deepEqual((await raiseTopology(jsm, topology)).updated, []);
  });
});

describe("a node consumer raised by an earlier build (exact declaration subject)", () => {
  let server: NatsServer;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  /** The exact subject earlier builds filtered a node's consumer on: its filter without the `.>`. */
  const earlierFilter = (node: string) => declarationFilter(node).slice(0, -2);
  before(async () => {
    server = await startNatsServer();
    nc = await connect({ servers: server.url });
    jsm = await jetstreamManager(nc);
    assert.deepEqual((await raiseTopology(jsm, { streams: topology.streams, consumers: [] })).refused, []);
  });
  after(async () => {
    await nc?.close();
    await server?.stop();
  });

  it("R22: is refused and named, not rewritten; deleted, it is raised again with the new filter", async () => {
    await jsm.consumers.add(CONTROL_STREAM, { durable_name: declarationConsumer("alpha"), filter_subject: earlierFilter("alpha"), ack_policy: AckPolicy.Explicit });
    const report = await raiseTopology(jsm, topology);
    assert.deepEqual(report.refused.map((r) => r.object), [`${CONTROL_STREAM}/${declarationConsumer("alpha")}`]);
    assert.match(report.refused[0]!.reason, /filter_subject/);
    assert.equal((await jsm.consumers.info(CONTROL_STREAM, declarationConsumer("alpha"))).config.filter_subject, earlierFilter("alpha"));
    await jsm.consumers.delete(CONTROL_STREAM, declarationConsumer("alpha"));
    const again = await raiseTopology(jsm, topology);
    assert.deepEqual(again.created, [`${CONTROL_STREAM}/${declarationConsumer("alpha")}`]);
    assert.equal((await jsm.consumers.info(CONTROL_STREAM, declarationConsumer("alpha"))).config.filter_subject, declarationFilter("alpha"));
  });

  it("R22 (field note, nats-server 2.9.10): updating a filter in place is accepted but delivery keeps the old filter, which is why raise refuses it", async () => {
    const durable = "field-note-filter";
    const js = jetstream(nc);
    await jsm.consumers.add(CONTROL_STREAM, { durable_name: durable, filter_subject: earlierFilter("beta"), ack_policy: AckPolicy.Explicit });
    const updated = await jsm.consumers.update(CONTROL_STREAM, durable, { filter_subject: declarationFilter("beta") });
    assert.equal(updated.config.filter_subject, declarationFilter("beta"), "the server says it took the new filter");
    await js.publish(declarationSubject("beta"), JSON.stringify({ node: "beta" }));
    assert.equal((await jsm.consumers.info(CONTROL_STREAM, durable)).num_pending, 1, "and counts the new subject as pending");
    const consumer = await js.consumers.get(CONTROL_STREAM, durable);
    const m = await consumer.next({ expires: 1_500 });
    assert.equal(m, null, "yet delivers nothing: a consumer updated in place would leave its node deaf");
  });
});

describe("raiseTopology with a memo (a controller's raises on every push)", () => {
  let server: NatsServer;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  const memo = newRaiseMemo();
  before(async () => {
    server = await startNatsServer();
    nc = await connect({ servers: server.url });
    jsm = await jetstreamManager(nc);
  });
  after(async () => {
    await nc?.close();
    await server?.stop();
  });

  it("R21 R22: asserting twice with a memo changes nothing, and a memo'd raise reads no consumer info", async () => {
    const first = await raiseTopology(jsm, topology, { memo, nc });
    assert.deepEqual(first.refused, []);
    const before = await busObjects(jsm);
    // Count consumer info and list requests the second raise makes: with the memo, none.
    let reads = 0;
    const spy = nc.subscribe(`${DEFAULT_JS_API_PREFIX}.CONSUMER.>`, { callback: (_e, m) => { if (/\.CONSUMER\.(INFO|LIST)\./.test(m.subject)) reads += 1; } });
    await nc.flush();
    const second = await raiseTopology(jsm, topology, { memo, nc });
    await nc.flush();
    spy.unsubscribe();
    assert.deepEqual([second.created, second.updated, second.refused], [[], [], []]);
    assert.equal(second.unchanged.length, first.created.length);
    assert.equal(reads, 0);
    assert.equal(await busObjects(jsm), before);
  });

  it("R21: a consumer deleted by hand is raised again though the memo verified it", async () => {
    await raiseTopology(jsm, topology, { memo, nc }); // raised and verified here, so the test stands alone
    await jsm.consumers.delete(CONTROL_STREAM, declarationConsumer("beta"));
    const report = await raiseTopology(jsm, topology, { memo, nc });
    assert.deepEqual(report.created, [`${CONTROL_STREAM}/${declarationConsumer("beta")}`]);
    assert.equal((await jsm.consumers.info(CONTROL_STREAM, declarationConsumer("beta"))).config.filter_subject, declarationFilter("beta"));
  });

  it("R21 R22: a stream deleted and raised again by hand is read in full: a foreign filter on it is refused, not rewritten", async () => {
    await raiseTopology(jsm, topology, { memo, nc }); // raised and verified here, so the test stands alone
    await jsm.streams.delete(CONTROL_STREAM);
    assert.deepEqual((await raiseTopology(jsm, { streams: topology.streams, consumers: [] })).refused, []);
    await jsm.consumers.add(CONTROL_STREAM, { durable_name: declarationConsumer("alpha"), filter_subject: declarationSubject("gamma"), ack_policy: AckPolicy.Explicit });
    const report = await raiseTopology(jsm, topology, { memo, nc });
    assert.deepEqual(report.refused.map((r) => r.object), [`${CONTROL_STREAM}/${declarationConsumer("alpha")}`]);
    assert.equal((await jsm.consumers.info(CONTROL_STREAM, declarationConsumer("alpha"))).config.filter_subject, declarationSubject("gamma"));
    // Refused stays refused on the next memo'd raise (a refusal is never remembered as verified).
    assert.deepEqual((await raiseTopology(jsm, topology, { memo, nc })).refused.map((r) => r.object), [`${CONTROL_STREAM}/${declarationConsumer("alpha")}`]);
  });

  it("R22: a spec the memo has not verified (its owned fields changed) is read and updated", async () => {
    await raiseTopology(jsm, topology, { memo, nc }); // raised and verified here, so the test stands alone
    const changed = {
      streams: topology.streams,
      consumers: topology.consumers.map((c) => c.config.durable_name === declarationConsumer("beta") ? { ...c, config: { ...c.config, max_deliver: 7 } } : c),
    };
    const report = await raiseTopology(jsm, changed, { memo, nc });
    assert.deepEqual(report.updated, [`${CONTROL_STREAM}/${declarationConsumer("beta")}`]);
    assert.equal((await jsm.consumers.info(CONTROL_STREAM, declarationConsumer("beta"))).config.max_deliver, 7);
    const back = await raiseTopology(jsm, topology, { memo, nc });
    assert.deepEqual(back.updated, [`${CONTROL_STREAM}/${declarationConsumer("beta")}`]);
    assert.equal((await jsm.consumers.info(CONTROL_STREAM, declarationConsumer("beta"))).config.max_deliver ?? -1, -1);
  });
});
