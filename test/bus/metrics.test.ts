/**
 * Metrics (issue 30): the controller and a host agent each serve Prometheus text on their own
 * port; after a command and a push the counters moved. A real nats-server, the real controller
 * start (startController, as `mesh controller --metrics` runs it) and a real host agent.
 */
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freshControllerSuite } from "../support/controller.ts";
import { waitFor } from "../support/natsServer.ts";
import { parseControllerConfig } from "../../src/config.ts";
import { startController, type Controller } from "../../src/bootstrap/main.ts";
import { memoryLog } from "../../src/bootstrap/log.ts";
import { controllerMetrics, type ControllerMetrics } from "../../src/metrics/controller.ts";
import { hostMetrics, type HostMetrics } from "../../src/metrics/host.ts";
import { serveMetrics, type MetricsServer } from "../../src/metrics/serve.ts";
import { initHostKeys, startHost, type Host } from "../../src/host/index.ts";
import { newUserKey } from "../../src/crypto/secrets.ts";
import { busUser } from "../../src/names.ts";

/** The value of one sample line `name{labels} value` in exposition `text`, or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

async function scrape(server: MetricsServer): Promise<string> {
  const response = await fetch(server.url);
  assert.equal(response.status, 200);
  assert.match(response.headers.get("content-type") ?? "", /^text\/plain/);
  return response.text();
}

describe("metrics: the controller's and a host agent's Prometheus endpoints", () => {
  const root = mkdtempSync(join(tmpdir(), "mesh-metrics-"));
  let controller: Controller;
  let metrics: ControllerMetrics;
  let served: MetricsServer;
  let host: Host;
  let hostMetricsOf: HostMetrics;
  let hostServed: MetricsServer;

  // Ours before the suite's: the controller and the host stop while their server still runs (node
  // runs after-hooks in the order they were added), or a connection left reconnecting keeps the process.
  after(async () => {
    await host?.stop();
    await controller?.stop();
    await served?.stop();
    await hostServed?.stop();
    rmSync(root, { recursive: true, force: true });
  });
  const suite = freshControllerSuite();
  before(async () => {
    metrics = controllerMetrics();
    served = await serveMetrics(metrics.registry, { host: "127.0.0.1", port: 0 });
    controller = await startController(parseControllerConfig(suite.fixture.env), { log: memoryLog(), metrics });
    hostMetricsOf = hostMetrics();
    hostServed = await serveMetrics(hostMetricsOf.registry, { host: "127.0.0.1", port: 0 });
  });

  it("issue 30: after a command and a push both endpoints' counters moved", async () => {
    const before = await scrape(served);
    assert.equal(sample(before, 'mesh_controller_commands_total{verb="node.enrol",outcome="ok"}'), undefined);
    assert.equal(sample(before, 'mesh_controller_nodes{state="never-sent"}'), 0);

    // A node with a real agent: enrolled (a command), then pushed to (the push verb, over the bus).
    const stateDir = join(root, "alpha");
    const { publicKey } = initHostKeys(stateDir);
    await suite.fixture.send("node.enrol", { node: "alpha", publicKey, nkey: newUserKey().publicKey });
    await suite.fixture.send("nodes", {});
    host = startHost({
      stateDir, node: "alpha", credential: { address: suite.server.url, user: busUser("node", "alpha"), seed: newUserKey().seed },
      log: () => undefined, backoff: { initialMs: 50, maxMs: 400 }, metrics: hostMetricsOf,
      onReport: (report) => hostMetricsOf.declarationReported(report),
    });
    const mid = await scrape(served);
    assert.equal(sample(mid, 'mesh_controller_nodes{state="never-sent"}'), 1);
    await suite.fixture.send("push", { wait: true });

    const text = await scrape(served);
    assert.equal(sample(text, 'mesh_controller_commands_total{verb="node.enrol",outcome="ok"}'), 1);
    assert.equal(sample(text, 'mesh_controller_commands_total{verb="nodes",outcome="ok"}'), 1);
    assert.equal(sample(text, 'mesh_controller_commands_total{verb="push",outcome="ok"}'), 1);
    assert.equal(sample(text, 'mesh_controller_command_duration_seconds_count{verb="node.enrol",outcome="ok"}'), 1);
    assert.equal(sample(text, 'mesh_controller_pushes_total{outcome="ok"}'), 1);
    assert.equal(sample(text, "mesh_controller_push_duration_seconds_count"), 1);
    // The agent applies it or reports it failed (this bus has no mesh CA for it): either way one line, counted.
    const outcome = ["applied", "failed"].find((o) => sample(text, `mesh_controller_push_nodes_total{outcome="${o}"}`) === 1);
    assert.ok(outcome, text);
    assert.ok(sample(text, "mesh_controller_records_sequence")! >= 3, "genesis, the enrolment and the push's record");
    assert.equal(sample(text, "mesh_controller_records_fold_lag"), 0);
    assert.equal(sample(text, "mesh_controller_reconnects_total"), 0);
    await waitFor(async () => sample(await scrape(served), `mesh_controller_nodes{state="${outcome}"}`) === 1, { name: `alpha counted ${outcome} (its report heard)` });

    const hostText = await scrape(hostServed);
    assert.equal(sample(hostText, 'mesh_host_declarations_total{outcome="applied"}'), outcome === "applied" ? 1 : 0);
    assert.equal(sample(hostText, 'mesh_host_declarations_total{outcome="refused"}'), outcome === "applied" ? 0 : 1);
    assert.ok(sample(hostText, "mesh_host_report_publishes_total")! >= 1);
    // Its consumer exists only once the push raised it: the agent may have dialled again before that.
    assert.ok(Number.isInteger(sample(hostText, "mesh_host_reconnects_total")), hostText);
  });

  it("issue 30: the host's modules by run state read what the runner last set", async () => {
    hostMetricsOf.setModuleRunStates({ running: 2, "backing-off": 1 });
    let text = await scrape(hostServed);
    assert.equal(sample(text, 'mesh_host_modules{state="running"}'), 2);
    assert.equal(sample(text, 'mesh_host_modules{state="backing-off"}'), 1);
    hostMetricsOf.setModuleRunStates({ running: 3 });
    text = await scrape(hostServed);
    assert.equal(sample(text, 'mesh_host_modules{state="running"}'), 3);
    assert.equal(sample(text, 'mesh_host_modules{state="backing-off"}'), undefined);
  });

  it("issue 30: anything but GET /metrics is 404", async () => {
    const response = await fetch(served.url.replace("/metrics", "/other"));
    assert.equal(response.status, 404);
    await response.text();
  });
});
