import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  RAISE_INFO_LIMIT, consumerReading, consumersToRead, newRaiseMemo, planConsumer, planStream, raiseReportOf, rememberRaise, specKey, wantedTopology,
  type RaiseOutcome,
} from "../../src/controller/planRaise.ts";
import { CATALOGUE_STREAM, REPORTS_STREAM } from "../../src/names.ts";
import { EXAMPLE_CONFIG, exampleMesh } from "./compose/exampleMesh.ts";
import type { ConsumerSpec, StreamSpec, Topology } from "../../src/compose/topology.ts";

/**
 * The raise's plan without a server (R5, R21, R22): what to do about each stream and consumer
 * given what the server holds, what to read first, the report and the memo. raise.ts carries it
 * out against a real nats-server (test/bus/raise.test.ts).
 */

const stream: StreamSpec = { name: "WORK", subjects: ["mesh.work.>"], retention: "workqueue", storage: "file", num_replicas: 1, deny_delete: true, deny_purge: false };
const consumer: ConsumerSpec = { stream: "WORK", config: { durable_name: "build", filter_subject: "mesh.work.build.>", ack_policy: "explicit", deliver_policy: "all" } };
/** A server's config of `stream`, with fields the server fills in that the mesh does not set. */
const serverStream = (extra: Record<string, unknown> = {}) => ({ ...stream, subjects: [...stream.subjects].reverse(), max_age: 0, discard: "old", ...extra });
const serverConsumer = (extra: Record<string, unknown> = {}) => ({ ...consumer.config, max_deliver: -1, ack_wait: 30_000, ...extra });

describe("raise plan: streams and consumers (R21, R22)", () => {
  it("R21: the raise asserts the composed topology and the REPORTS stream", () => {
    const { state } = exampleMesh();
    const wanted = wantedTopology(state, { ...EXAMPLE_CONFIG, replicas: 3 });
    const reports = wanted.streams.find((s) => s.name === REPORTS_STREAM);
    assert.equal(reports?.num_replicas, 3);
    assert.equal(reports?.max_msgs_per_subject, 1);
    assert.ok(wanted.streams.length > 1 && wanted.consumers.length > 0);
  });
  it("R21: a stream is added when missing, left when every field the mesh sets agrees, updated in place otherwise", () => {
    assert.deepEqual(planStream(stream, undefined), { kind: "add" });
    assert.deepEqual(planStream(stream, serverStream()), { kind: "unchanged" }, "subjects in another order and fields the mesh does not set change nothing");
    assert.deepEqual(planStream(stream, serverStream({ num_replicas: 3 })), { kind: "update" });
    assert.deepEqual(planStream(stream, serverStream({ subjects: ["other.>"] })), { kind: "update" });
    assert.deepEqual(planStream(stream, serverStream({ deny_delete: undefined })), { kind: "update" });
    assert.deepEqual(planStream({ ...stream, deny_delete: false }, serverStream({ deny_delete: undefined })), { kind: "unchanged" }, "a boolean the server leaves out is false");
  });

  it("R21: a stream whose retention or storage differs is refused, naming both values: the server cannot change them in place", () => {
    const plan = planStream(stream, serverStream({ retention: "limits", storage: "memory" }));
    assert.equal(plan.kind, "refuse");
    assert.ok(plan.kind === "refuse" && plan.refusal.object === "WORK" && /retention and storage/.test(plan.refusal.reason) && plan.refusal.reason.includes("limits ≠ workqueue"));
  });

  it("R47: CATALOGUE is created when missing and never updated: a difference (replicas, say) is refused, naming the field and why no mesh credential may change the records' configuration", () => {
    const { state } = exampleMesh();
    const records = wantedTopology(state, EXAMPLE_CONFIG).streams.find((s) => s.name === CATALOGUE_STREAM)!;
    assert.deepEqual(planStream(records, undefined), { kind: "add" });
    assert.deepEqual(planStream(records, { ...records, max_age: 0 }), { kind: "unchanged" });
    const plan = planStream({ ...records, num_replicas: 3 }, records);
    assert.equal(plan.kind, "refuse");
    assert.ok(plan.kind === "refuse" && plan.refusal.object === CATALOGUE_STREAM && plan.refusal.reason.includes("num_replicas") && plan.refusal.reason.includes("R47"), JSON.stringify(plan));
  });

  it("R22: a consumer is added when missing, left when equal (max_deliver unset reads as -1), updated by the fields that differ", () => {
    assert.deepEqual(planConsumer(consumer, undefined), { kind: "add" });
    assert.deepEqual(planConsumer(consumer, serverConsumer()), { kind: "unchanged" });
    const never = { ...consumer, config: { ...consumer.config, max_deliver: -1 } };
    assert.deepEqual(planConsumer(never, serverConsumer({ max_deliver: undefined })), { kind: "unchanged" });
    assert.deepEqual(planConsumer(never, serverConsumer({ max_deliver: 5 })), { kind: "update", delta: { max_deliver: -1 } });
  });

  it("R22: a consumer whose filter, deliver or ack policy differs is refused and left as it is (never rewritten by accident)", () => {
    for (const [field, value] of [["filter_subject", "mesh.work.other"], ["deliver_policy", "new"], ["ack_policy", "none"]] as const) {
      const plan = planConsumer(consumer, serverConsumer({ [field]: value }));
      assert.equal(plan.kind, "refuse", field);
      assert.ok(plan.kind === "refuse" && plan.refusal.object === "WORK/build" && plan.refusal.reason.includes(field));
    }
    const unfiltered = planConsumer(consumer, serverConsumer({ filter_subject: undefined }));
    assert.equal(unfiltered.kind, "refuse", "a missing filter is the empty one");
  });
});

describe("raise plan: what to read, the report, the memo", () => {
  it("R22: consumers of a stream that does not exist are skipped (refused), of a stream just created are none, else listed or, with a memo knowing the stream, named", () => {
    assert.equal(consumerReading({ object: "WORK", reason: "x" }, true, undefined, "t1"), "skip");
    assert.equal(consumerReading(undefined, false, undefined, undefined), "skip");
    assert.equal(consumerReading("created", false, undefined, "t1"), "none");
    for (const raised of ["updated", "unchanged", undefined] as const) {
      assert.equal(consumerReading(raised, true, undefined, "t1"), "list", String(raised));
      assert.equal(consumerReading(raised, true, { created: "t0" }, "t1"), "list", "a stream raised again (another created) is read in full");
      assert.equal(consumerReading(raised, true, { created: "t1" }, "t1"), "names");
    }
  });

  it("a consumer the memo verified with this very spec is not read; others are, and many are listed instead", () => {
    const specs = [consumer, { ...consumer, config: { ...consumer.config, durable_name: "changed" } }, { ...consumer, config: { ...consumer.config, durable_name: "gone" } }];
    const known = { verified: new Map([["build", specKey(consumer)], ["changed", "an older spec"]]) };
    assert.deepEqual(consumersToRead(specs, new Set(["build", "changed"]), known), { verified: ["WORK/build"], toRead: ["changed"], listAll: false });
    const many = Array.from({ length: RAISE_INFO_LIMIT + 1 }, (_, i) => ({ ...consumer, config: { ...consumer.config, durable_name: `c${i}` } }));
    assert.equal(consumersToRead(many, new Set(many.map((s) => s.config.durable_name)), { verified: new Map() }).listAll, true);
  });

  it("the report lists each object by its outcome in topology order; the memo keeps what was found equal and forgets the rest", () => {
    const other: ConsumerSpec = { ...consumer, config: { ...consumer.config, durable_name: "other" } };
    const topology: Topology = { streams: [stream], consumers: [consumer, other] };
    const refusal = { object: "WORK/other", reason: "no" };
    const outcome = new Map<string, RaiseOutcome>([["WORK", "updated"], ["WORK/build", "created"], ["WORK/other", refusal]]);
    assert.deepEqual(raiseReportOf(topology, outcome), { created: ["WORK/build"], updated: ["WORK"], unchanged: [], refused: [refusal] });
    const memo = newRaiseMemo();
    memo.set("WORK", { created: "t0", verified: new Map([["other", "stale"]]) });
    rememberRaise(memo, topology, outcome, new Map([["WORK", "t1"]]));
    assert.deepEqual([...memo.get("WORK")!.verified], [["build", specKey(consumer)]]);
    assert.equal(memo.get("WORK")!.created, "t1");
    rememberRaise(memo, topology, outcome, new Map());
    assert.equal(memo.has("WORK"), false, "a stream that is gone is forgotten");
  });
});
