import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { planIssueAndAssign, planPlacement, planRegistrations, pushLines, resumeRefusal } from "../../src/up/plan.ts";
import { registrationOrder } from "../../src/manifest/order.ts";

/**
 * What `mesh up` asks of the controller to set up the example mesh, without a server: each step
 * only when it is not done yet, so an interrupted first `up` completes and a second changes
 * nothing (test/bus/up.test.ts runs it against a real mesh).
 */

const manifests = [
  { file: "app.json", manifest: { name: "app", uses: ["mesh-store"] } },
  { file: "store.json", manifest: { name: "store", seats: { "mesh-store": { protocol: "postgres" } }, claims: ["mesh-store"] } },
  { file: "broker.json", manifest: { name: "broker", seats: { "mesh-broker": { protocol: "nats" } }, claims: ["mesh-broker"] } },
];

describe("mesh up plan: the example mesh", () => {
  it("registers each manifest not registered yet, a seat's declaring module before its users; nothing when all are", () => {
    const ordered = registrationOrder(manifests);
    const first = planRegistrations(new Set(), ordered);
    assert.deepEqual(first.map((c) => [c.verb, (c.body.manifest as { name: string }).name]), ordered.map((m) => ["module.register", m.manifest.name]));
    assert.ok(first.findIndex((c) => c.line.endsWith("store")) < first.findIndex((c) => c.line.endsWith("app")));
    assert.deepEqual(planRegistrations(new Set(["store"]), ordered).map((c) => c.line), ordered.filter((m) => m.manifest.name !== "store").map((m) => `up: registering ${m.manifest.name}`));
    assert.deepEqual(planRegistrations(new Set(["store", "app", "broker"]), ordered), []);
  });

  it("issues what is not issued and assigns what is not on the node, module by module; nothing when done", () => {
    const commands = planIssueAndAssign([
      { name: "a", issued: false, nodes: [] },
      { name: "b", issued: true, nodes: ["other"] },
      { name: "c", issued: false, nodes: ["local"] },
      { name: "d", issued: true, nodes: ["local"] },
    ], "local");
    assert.deepEqual(commands.map((c) => [c.verb, c.body]), [
      ["module.issue", { module: "a" }], ["assign", { module: "a", node: "local" }],
      ["assign", { module: "b", node: "local" }],
      ["module.issue", { module: "c" }],
    ]);
    assert.deepEqual(planIssueAndAssign([{ name: "d", issued: true, nodes: ["local"] }], "local"), []);
  });

  it("R7: places the local node as the overlay's hub unless it is placed", () => {
    assert.deepEqual(planPlacement([{ name: "local", overlayName: null }], "local").map((c) => [c.verb, c.body]), [["overlay.place", { node: "local", hub: true }]]);
    assert.equal(planPlacement([], "local").length, 1, "a node the answer does not list is placed too (the controller refuses it if it is unknown)");
    assert.deepEqual(planPlacement([{ name: "local", overlayName: "local.internal" }], "local"), []);
  });

  it("R32: a line per node of the push report, and the controller's rotation when it switched", () => {
    assert.deepEqual(pushLines({ nodes: [{ node: "a", outcome: "applied", digest: "0123456789abcdef" }, { node: "b", outcome: "failed", error: "no" }], controllerRotation: "applied" }), [
      "up: push: a applied 0123456789ab", "up: push: b failed: no", "up: push: the controller switched to its rotated key (applied)",
    ]);
    assert.deepEqual(pushLines({ nodes: [] }), []);
  });

  // Found by a new-user trial: the repair of a server that had missed a list showed only in `--json`.
  it("R60: on a cluster, each server's outcome of the user list, a repaired one named so, and a missed one with its reason", () => {
    const lines = pushLines({
      nodes: [{ node: "a", outcome: "applied", digest: "0123456789abcdef" }],
      servers: [
        { node: "a", server: "mesh-bus-1", ok: true, changed: false },
        { node: "a", server: "mesh-bus-2", ok: true, changed: true },
        { node: "a", server: "mesh-bus-3", ok: false, error: "its monitoring endpoint did not answer" },
      ],
    });
    assert.ok(lines.some((l) => l.startsWith("up: push: ") && /mesh-bus-1 unchanged/.test(l) && /mesh-bus-2 repaired/.test(l)), lines.join("\n"));
    assert.ok(lines.some((l) => /server mesh-bus-3 missed the user list: its monitoring endpoint did not answer/.test(l)), lines.join("\n"));
  });
});

describe("mesh up on a mesh that exists (issue 29)", () => {
  const made = { dir: ".mesh", genesisAddress: "tls://127.0.0.1:4222", servers: 1, node: "box" };

  it("resumes when nothing differs from how the mesh was made, or nothing is asked", () => {
    assert.equal(resumeRefusal(made, {}), undefined);
    assert.equal(resumeRefusal(made, { brokerAddress: "tls://127.0.0.1:4222", node: "box", cluster: 1 }), undefined);
  });

  it("refuses an --address that differs, naming both and the fix", () => {
    const refusal = resumeRefusal(made, { brokerAddress: "tls://127.0.0.1:4300", addressSource: "--address" }) ?? "";
    assert.match(refusal, /--address tls:\/\/127\.0\.0\.1:4300/);
    assert.match(refusal, /tls:\/\/127\.0\.0\.1:4222/);
    assert.match(refusal, /drop --address/);
    assert.match(refusal, /new --dir/);
  });

  it("refuses a --node that differs, naming both and the fix", () => {
    const refusal = resumeRefusal(made, { node: "other" }) ?? "";
    assert.match(refusal, /--node other/);
    assert.match(refusal, /\bbox\b/);
    assert.match(refusal, /drop --node/);
  });

  it("R62: refuses a --cluster that differs, as before", () => {
    assert.match(resumeRefusal(made, { cluster: 3 }) ?? "", /--cluster 3.*1 server\b/);
  });
});
