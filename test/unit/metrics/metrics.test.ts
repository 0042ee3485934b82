import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { parseMetricsListen } from "../../../src/metrics/serve.ts";
import { metricsListenOf } from "../../../src/cli/metricsFlag.ts";
import { UsageError } from "../../../src/cli/context.ts";
import { nodeStateCounts, nodeStateOf } from "../../../src/metrics/nodeStates.ts";
import { controllerMetrics } from "../../../src/metrics/controller.ts";
import { hostMetrics } from "../../../src/metrics/host.ts";
import { MeshBuilder } from "../compose/exampleMesh.ts";
import type { State } from "../../../src/projections/index.ts";

describe("metrics (pure parts)", () => {
  it("issue 30: --metrics takes a port (on 127.0.0.1), host:port or [ipv6]:port, and refuses anything else naming the flag", () => {
    assert.deepEqual(parseMetricsListen("9464"), { ok: true, value: { host: "127.0.0.1", port: 9464 } });
    assert.deepEqual(parseMetricsListen("0.0.0.0:9464"), { ok: true, value: { host: "0.0.0.0", port: 9464 } });
    assert.deepEqual(parseMetricsListen("localhost:0"), { ok: true, value: { host: "localhost", port: 0 } });
    assert.deepEqual(parseMetricsListen("[::1]:9464"), { ok: true, value: { host: "::1", port: 9464 } });
    for (const bad of ["", "http://x:1", "x:", "70000", "a b:1"]) assert.equal(parseMetricsListen(bad).ok, false, bad);
    assert.equal(metricsListenOf({}), undefined, "off by default");
    assert.throws(() => metricsListenOf({ metrics: "nope" }), UsageError);
  });

  it("R78 issue 30: a node is never-sent, unreported, applied, failed or behind from what it was last sent and last reported", () => {
    const [d1, d2, d0] = ["1", "2", "0"].map((c) => c.repeat(64)) as [string, string, string];
    const sent: State = new MeshBuilder().genesis().node("alpha").node("beta").node("gamma")
      .commit("push", "p1", { type: "DeclarationSent", node: "alpha", digest: d1, recordsSequence: 1 }, { type: "DeclarationSent", node: "beta", digest: d2, recordsSequence: 1 })
      .state();
    assert.equal(nodeStateOf(sent, "gamma", undefined), "never-sent");
    assert.equal(nodeStateOf(sent, "alpha", undefined), "unreported");
    assert.equal(nodeStateOf(sent, "alpha", { digest: d1, ok: true }), "applied");
    assert.equal(nodeStateOf(sent, "alpha", { digest: d1, ok: false }), "failed");
    assert.equal(nodeStateOf(sent, "alpha", { digest: d0, ok: true }), "behind");
    assert.deepEqual(nodeStateCounts(sent, new Map([["alpha", { digest: d1, ok: true }], ["beta", { digest: d0, ok: true }]])),
      { "never-sent": 1, unreported: 0, applied: 1, failed: 0, behind: 1 });
  });

  it("issue 30: each process's metrics live on a registry of their own, and an unknown verb cannot grow the labels", async () => {
    const one = controllerMetrics();
    const two = controllerMetrics();
    one.commandDone("nodes", "ok", 0.01);
    one.commandDone("no-such-verb-1", "unknown-verb", 0.01);
    one.commandDone("no-such-verb-2", "unknown-verb", 0.01);
    const text = await one.registry.metrics();
    assert.match(text, /mesh_controller_commands_total\{verb="nodes",outcome="ok"\} 1/);
    assert.match(text, /mesh_controller_commands_total\{verb="unknown",outcome="unknown-verb"\} 2/);
    assert.doesNotMatch(text, /no-such-verb/);
    assert.doesNotMatch(await two.registry.metrics(), /verb="nodes"/);
    const host = hostMetrics();
    host.declarationReported({ ok: false });
    assert.match(await host.registry.metrics(), /mesh_host_declarations_total\{outcome="refused"\} 1/);
  });
});
