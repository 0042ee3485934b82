/**
 * `npm run bench -- push [--nodes 1000,10000] [--json]`: sending declarations to generated nodes.
 *
 * For each size: a fresh nats-server, a genesis record, N enrolled nodes (real X25519 keys), one
 * issued module assigned to every node (so each declaration carries a credential to re-seal to its
 * node). Then, in the same run and on the same server:
 * - raise: the first raise of N node consumers (timed apart: a push after it only lists them);
 * - push: push() to every node (compose, re-seal, pipelined publish, DeclarationSent records);
 * - raw: a pipelined JetStream publish of the same payloads with the same window, nothing else.
 * Prints declarations/s for both and their ratio (goal ≥ 0.8).
 */
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { startNatsServer } from "../../test/support/natsServer.ts";
import { openCatalogue } from "../../src/events/catalogue.ts";
import type { MeshEvent } from "../../src/events/index.ts";
import { hashPassword, newMeshKey, newNodeKeyPair, newPassword, sealWithMeshKey } from "../../src/crypto/secrets.ts";
import { busUser } from "../../src/names.ts";
import { PUBLISH_WINDOW, push, raiseMesh } from "../../src/push/push.ts";
import { GENESIS_COMMAND_ID, decideGenesis } from "../../installer/record.ts";
import { BOOTSTRAP_USER } from "../../installer/carried.ts";

type Row = { steps: Record<string, number>; againMs: number; againRatio: number; nodes: number; raiseMs: number; pushMs: number; pushPerSecond: number; rawMs: number; rawPerSecond: number; ratio: number; bytes: number };

const at = () => new Date().toISOString();

async function one(nodes: number): Promise<Row> {
  const server = await startNatsServer();
  const nc = await connect({ servers: server.url, inboxPrefix: "_INBOX_controller-mesh-controller" });
  try {
    const meshKey = newMeshKey();
    const catalogue = await openCatalogue(nc);
    const operator = newPassword();
    const genesis = await catalogue.transact(GENESIS_COMMAND_ID, (state) => decideGenesis(state, {
      genesisAddress: server.url, fingerprint: Array(32).fill("AB").join(":"), bootstrapUser: BOOTSTRAP_USER, operator: "bench",
      operatorSecret: { password: operator, hash: hashPassword(operator), sealed: sealWithMeshKey(meshKey, operator) }, now: at(),
    }));
    if (!genesis.ok) throw new Error(genesis.refusal.message);

    const meta = (commandId: string) => ({ actor: "operator-bench", commandId, at: at() });
    const password = newPassword();
    await catalogue.transact("bench-module", () => ({
      ok: true,
      entity: { kind: "module", id: "agent" },
      events: [
        { ...meta("bench-module"), type: "ModuleRegistered", manifest: { name: "agent", version: "1", description: "", run: { command: ["agent"] }, seats: {}, claims: [], uses: [], follows: [], tools: [] } },
        { ...meta("bench-module"), type: "ModuleIssued", module: "agent" },
        { ...meta("bench-module"), type: "CredentialMinted", principal: { kind: "module", name: "agent" }, user: busUser("module", "agent"), hash: hashPassword(password), sealed: sealWithMeshKey(meshKey, password), address: server.url },
      ] as MeshEvent[],
    }));
    const names = Array.from({ length: nodes }, (_, i) => `node-${i}`);
    for (let start = 0; start < nodes; start += 1000) {
      const id = `bench-nodes-${start}`;
      const events: MeshEvent[] = [];
      for (const node of names.slice(start, start + 1000)) {
        events.push({ ...meta(id), type: "NodeEnrolled", node, publicKey: newNodeKeyPair().publicKey });
        events.push({ ...meta(id), type: "ModuleAssigned", module: "agent", node });
      }
      const result = await catalogue.transact(id, () => ({ ok: true, entity: { kind: "bench", id: `nodes-${start}` }, events }));
      if (!result.ok) throw new Error(result.refusal.message);
    }

    const compose = { controllerSubmits: ["mesh-build"] };
    const jsm = await jetstreamManager(nc);
    let t = performance.now();
    const raised = await raiseMesh(jsm, catalogue.state, compose);
    const raiseMs = performance.now() - t;
    if (raised.refused.length > 0) throw new Error(`raise refused ${raised.refused.length} objects`);

    const log = { info: () => undefined, error: (line: string) => console.error(line) };
    t = performance.now();
    const steps: Record<string, number> = {};
    const sealCache = new Map<string, string>();
    const report = await push({ nc, catalogue, meshKey, compose, log, newId: () => `bench-push-${nodes}`, timings: steps, sealCache });
    for (const key of Object.keys(steps)) steps[key] = Math.round(steps[key]!);
    const pushMs = performance.now() - t;
    const sent = report.nodes.filter((n) => n.outcome === "sent").length;
    if (sent !== nodes) throw new Error(`push sent ${sent} of ${nodes}`);

    // Again, every node named (sent though unchanged), with the controller's warm seal cache.
    t = performance.now();
    const again = await push({ nc, catalogue, meshKey, compose, log, newId: () => `bench-again-${nodes}`, sealCache }, { nodes: names });
    const againMs = performance.now() - t;
    if (again.nodes.filter((n) => n.outcome === "sent").length !== nodes) throw new Error("the second push did not send every node");

    // The raw reference: the same payloads (as the last push sent them), same window, nothing else.
    const js = jetstream(nc);
    const consumer = await js.consumers.get("CONTROL");
    const payloads: Array<{ subject: string; data: Uint8Array }> = [];
    const messages = await consumer.fetch({ max_messages: nodes, expires: 10_000 });
    for await (const m of messages) {
      payloads.push({ subject: m.subject, data: m.data });
      if (payloads.length >= nodes) break;
    }
    const bytes = payloads.reduce((sum, p) => sum + p.data.length, 0) / Math.max(1, payloads.length);
    t = performance.now();
    for (let start = 0; start < payloads.length; start += PUBLISH_WINDOW) {
      await Promise.all(payloads.slice(start, start + PUBLISH_WINDOW).map((p) => js.publish(p.subject, p.data)));
    }
    const rawMs = performance.now() - t;
    return {
      steps, againMs: Math.round(againMs), againRatio: Number((rawMs / againMs).toFixed(2)), nodes, raiseMs: Math.round(raiseMs), pushMs: Math.round(pushMs), pushPerSecond: Math.round((nodes / pushMs) * 1000),
      rawMs: Math.round(rawMs), rawPerSecond: Math.round((payloads.length / rawMs) * 1000),
      ratio: Number(((nodes / pushMs) / (payloads.length / rawMs)).toFixed(2)), bytes: Math.round(bytes),
    };
  } finally {
    await nc.close();
    await server.stop();
  }
}

/** Runs the bench; `--nodes 1000,10000` picks the sizes, `--json` prints JSON rows. */
export async function run(args: string[]): Promise<void> {
  const sizesArg = args.includes("--nodes") ? args[args.indexOf("--nodes") + 1] : undefined;
  const sizes = (sizesArg ?? "1000,10000").split(",").map(Number).filter((n) => Number.isInteger(n) && n > 0);
  const rows: Row[] = [];
  for (const size of sizes) rows.push(await one(size));
  if (args.includes("--json")) {
    console.log(JSON.stringify(rows, null, 2));
    return;
  }
  console.log("nodes   raise(ms)  push(ms)  push decl/s  raw(ms)  raw msg/s  ratio  bytes/decl");
  for (const r of rows) {
    console.log(
      `${String(r.nodes).padEnd(7)} ${String(r.raiseMs).padStart(9)} ${String(r.pushMs).padStart(9)} ${String(r.pushPerSecond).padStart(12)} ${String(r.rawMs).padStart(8)} ${String(r.rawPerSecond).padStart(10)} ${String(r.ratio).padStart(6)} ${String(r.bytes).padStart(11)}`,
    );
  }
  for (const r of rows) console.log(`${r.nodes} nodes, push again (all named, warm seal cache): ${r.againMs} ms, ratio ${r.againRatio}`);
  for (const r of rows) console.log(`${r.nodes} nodes, push steps (ms): ${Object.entries(r.steps).map(([k, v]) => `${k} ${v}`).join(", ")} (seal runs inside publish)`);
  console.log("goal: ratio ≥ 0.8 (push declarations/s against a raw pipelined JetStream publish of the same payloads)");
}
