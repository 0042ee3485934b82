import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  EMPTY_TALLY, INFO_RESPONSE_TYPE, PING_RESPONSE_TYPE, STATS_RESPONSE_TYPE, controllerEndpoints, endpointName, infoReply, microVerbOf, pingReply,
  statsReply, tallied,
} from "../../../src/discovery/micro.ts";
import { VERBS } from "../../../src/contracts/verbs.ts";
import { COMMAND_QUEUE, commandEndpointSubject, commandOfSubject, commandSubject, microServiceSubjects, microSubject } from "../../../src/names.ts";

const identity = { name: "mesh-controller", id: "abc123", version: "0.1.0", metadata: { mesh: "m" } };
/** The protocol's endpoint and service names: letters, digits, dashes, underscores (ADR-32). */
const PROTOCOL_NAME = /^[A-Za-z0-9\-_]+$/;

describe("discovery: the NATS services protocol's replies (pure)", () => {
  it("a ping names the service, the instance, its version and metadata, typed as the protocol's ping_response", () => {
    assert.deepEqual(pingReply(identity), { name: "mesh-controller", id: "abc123", version: "0.1.0", metadata: { mesh: "m" }, type: PING_RESPONSE_TYPE });
    assert.equal(PING_RESPONSE_TYPE, "io.nats.micro.v1.ping_response");
  });

  it("info lists one endpoint per verb of the registry, on the verb's command subject in the controllers' queue group", () => {
    const endpoints = controllerEndpoints();
    const info = infoReply(identity, "the mesh's controller", endpoints);
    assert.equal(info.type, INFO_RESPONSE_TYPE);
    assert.equal(INFO_RESPONSE_TYPE, "io.nats.micro.v1.info_response");
    assert.equal(info.description, "the mesh's controller");
    assert.deepEqual(info.endpoints.map((e) => e.metadata.verb), Object.keys(VERBS).sort());
    for (const endpoint of info.endpoints) {
      const verb = endpoint.metadata.verb!;
      assert.match(endpoint.name, PROTOCOL_NAME, verb);
      assert.equal(endpoint.name, endpointName(verb));
      assert.equal(endpoint.subject, commandEndpointSubject(verb));
      assert.equal(endpoint.queue_group, COMMAND_QUEUE);
      assert.equal(endpoint.metadata.kind, VERBS[verb as keyof typeof VERBS].kind);
      // an asker's real subject for the verb lies under the endpoint's subject
      assert.equal(commandOfSubject(commandSubject("operator-ada", verb))?.verb, verb);
      assert.equal(endpoint.subject.replace("*", "operator-ada"), commandSubject("operator-ada", verb));
    }
    assert.deepEqual(Object.keys(info), ["name", "id", "version", "metadata", "type", "description", "endpoints"]);
  });

  it("stats count requests, refusals as errors with the last code, and processing time in nanoseconds", () => {
    let tally = tallied(EMPTY_TALLY, "ok", 0.002);
    tally = tallied(tally, "not-found", 0.004);
    tally = tallied(tally, "ok", 0.003);
    const endpoints = controllerEndpoints();
    const stats = statsReply(identity, new Date("2026-01-02T03:04:05.000Z"), endpoints, new Map([["node.enrol", tally]]));
    assert.equal(stats.type, STATS_RESPONSE_TYPE);
    assert.equal(STATS_RESPONSE_TYPE, "io.nats.micro.v1.stats_response");
    assert.equal(stats.started, "2026-01-02T03:04:05.000Z");
    const enrol = stats.endpoints.find((e) => e.name === "node_enrol")!;
    assert.deepEqual(enrol, {
      name: "node_enrol", subject: commandEndpointSubject("node.enrol"), queue_group: COMMAND_QUEUE,
      num_requests: 3, num_errors: 1, processing_time: 9_000_000, average_processing_time: 3_000_000, last_error: "not-found",
    });
    const idle = stats.endpoints.find((e) => e.name === "nodes")!;
    assert.equal(idle.num_requests, 0);
    assert.equal(idle.average_processing_time, 0);
    assert.equal(idle.last_error, "");
    assert.equal(stats.endpoints.length, Object.keys(VERBS).length);
  });

  it("a request is this instance's on $SRV.<verb>, $SRV.<verb>.<name> and $SRV.<verb>.<name>.<id>, not another's", () => {
    for (const verb of ["PING", "INFO", "STATS"] as const) {
      assert.equal(microVerbOf(microSubject(verb), identity), verb);
      assert.equal(microVerbOf(microSubject(verb, identity.name), identity), verb);
      assert.equal(microVerbOf(microSubject(verb, identity.name, identity.id), identity), verb);
      assert.equal(microVerbOf(microSubject(verb, "other"), identity), null);
      assert.equal(microVerbOf(microSubject(verb, identity.name, "someone-else"), identity), null);
    }
    assert.equal(microVerbOf("$SRV.FOO", identity), null);
    assert.equal(microVerbOf("mesh.command.x.nodes", identity), null);
  });

  it("the service's subscribe grant covers every subject it answers and nothing of another service", () => {
    const grants = microServiceSubjects("mesh-controller");
    assert.deepEqual(grants, [
      "$SRV.PING", "$SRV.PING.mesh-controller", "$SRV.PING.mesh-controller.*",
      "$SRV.INFO", "$SRV.INFO.mesh-controller", "$SRV.INFO.mesh-controller.*",
      "$SRV.STATS", "$SRV.STATS.mesh-controller", "$SRV.STATS.mesh-controller.*",
    ]);
    assert.throws(() => microSubject("PING", undefined, "id"), Error);
  });
});
