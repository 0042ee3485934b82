/**
 * `npm run bench -- push [--nodes 1000,10000] [--json]`: sending declarations to generated nodes.
 *
 * For each size: a fresh nats-server, a genesis record with the controller's credential, N nodes
 * enrolled as node.enrol records them (real X25519 keys, an nkey each), one issued module assigned
 * to every node (so each declaration carries a credential to re-seal to its node) and a broker
 * module on node-0 (so the push composes the whole user list and sends it to its holder, R49).
 * Then, in the same run and on the same server:
 * - raise: the first raise of N node consumers (timed apart: a push after it only lists them);
 * - push: push() to every node (compose, re-seal, pipelined publish, DeclarationSent records);
 * - raw: a pipelined JetStream publish of the same payloads (declarations and list parts) with the
 *   same window, nothing else;
 * - again: push() naming every node, the controller's seal cache warm;
 * raw and again alternate in ROUNDS rounds, and their medians are reported.
 * Prints each push's ratio, raw ms over push ms (goal ≥ 0.9, issue 13).
 *
 * `--users 10000[,50000]`: the broker's side. A nats-server whose users come from an include file
 * (pid file, monitoring port), a broker module held by node `hub` whose host agent runs for real
 * (startHost with the bus's reload options), and N enrolled nodes with credentials, so the
 * composed user list has N + 3 users (~450 bytes each: ~4.5 MiB at 10,000, far over the bus's
 * 1 MiB message limit, so it travels in parts). Times one push (every node sent: N empty
 * declarations, the hub's declaration and its list's parts) to the hub's report that the bus
 * reloaded that list, and checks a generated user can then connect. Without --nodes or --users
 * both benches run at their default sizes.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, nkeyAuthenticator } from "@nats-io/transport-node";
import { composeBusUsers, renderUserList } from "../../src/compose/index.ts";
import { configLoadTime, initHostKeys, startHost } from "../../src/host/index.ts";
import { startNatsServer } from "../../test/support/natsServer.ts";
import { openCatalogue } from "../../src/records/catalogue.ts";
import type { MeshEvent } from "../../src/events/index.ts";
import { newFreshSecret, newMeshKey, newNodeKeyPair, newUserKey, sealWithMeshKey } from "../../src/crypto/secrets.ts";
import { BROKER_SEAT, CONTROLLER_NAME, CONTROL_STREAM, busUser, inboxPrefix } from "../../src/names.ts";
import { PUBLISH_WINDOW } from "../../src/push/publish.ts";
import { newCompositionMemo } from "../../src/push/composition.ts";
import { push } from "../../src/push/push.ts";
import { newRaiseMemo, raiseMesh } from "../../src/controller/raise.ts";
import { GENESIS_COMMAND_ID, decideGenesis } from "../../src/commands/genesis.ts";
import { BOOTSTRAP_USER } from "../../src/genesis.ts";
import { option } from "./args.ts";

export type Row = {
  steps: Record<string, number>; againSteps: Record<string, number>; againMs: number; againRatio: number; nodes: number; raiseMs: number; pushMs: number; pushPerSecond: number; rawMs: number; rawPerSecond: number; ratio: number; bytes: number;
  /** This process's CPU milliseconds (the controller's side; the bus runs apart) during the push, the push again, the raw publish. */
  cpu: { push: number; again: number; raw: number };
};

/** Rounds of (raw publish, push again) measured alternately; their medians are reported. */
const ROUNDS = 5;

/** The middle value (the lower middle of an even count). */
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)]!;

/** CPU milliseconds of this process since `since` (process.cpuUsage). */
const cpuSince = (since: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(since);
  return Math.round((used.user + used.system) / 1000);
};

const at = () => new Date().toISOString();

/** One push measurement at `nodes` nodes against a raw pipelined publish (see the module comment). */
export async function one(nodes: number): Promise<Row> {
  const server = await startNatsServer();
  const nc = await connect({ servers: server.url, inboxPrefix: "_INBOX_controller-mesh-controller" });
  try {
    const meshKey = newMeshKey();
    const catalogue = await openCatalogue(nc);
    const genesis = await catalogue.transact(GENESIS_COMMAND_ID, (state) => decideGenesis(state, {
      genesisAddress: server.url, fingerprint: Array(32).fill("AB").join(":"), bootstrapUser: BOOTSTRAP_USER, operator: "bench",
      operatorSecret: newFreshSecret((seed) => sealWithMeshKey(meshKey, seed)), now: at(),
    }));
    if (!genesis.ok) throw new Error(genesis.refusal.message);

    const meta = (commandId: string) => ({ actor: "operator-bench", commandId, at: at() });
    const fresh = () => newFreshSecret((seed) => sealWithMeshKey(meshKey, seed));
    const agent = fresh();
    const brokerModule = fresh();
    const controller = fresh();
    // A mesh as it runs: the controller's own credential (R14), a broker module claiming mesh-broker
    // on node-0 (R49: so the push composes, renders and sends the user list), and every node
    // enrolled with its nkey as node.enrol records it (R64), so the list names every principal.
    await catalogue.transact("bench-module", () => ({
      ok: true,
      entity: { kind: "module", id: "agent" },
      events: [
        { ...meta("bench-module"), type: "CredentialMinted", principal: { kind: "controller", name: CONTROLLER_NAME }, user: BOOTSTRAP_USER, nkey: controller.nkey, sealed: controller.sealed, address: server.url },
        { ...meta("bench-module"), type: "ModuleRegistered", manifest: { name: "agent", version: "1", description: "", run: { command: ["agent"] }, seats: {}, claims: [], uses: [], follows: [], tools: [] } },
        { ...meta("bench-module"), type: "ModuleIssued", module: "agent" },
        { ...meta("bench-module"), type: "CredentialMinted", principal: { kind: "module", name: "agent" }, user: busUser("module", "agent"), nkey: agent.nkey, sealed: agent.sealed, address: server.url },
        { ...meta("bench-module"), type: "ModuleRegistered", manifest: { name: "broker", version: "2.9.10", description: "", run: { command: ["nats-server"] }, seats: { [BROKER_SEAT]: { protocol: "nats", accepts: [], emits: [] } }, claims: [BROKER_SEAT], uses: [], follows: [], tools: [] } },
        { ...meta("bench-module"), type: "ModuleIssued", module: "broker" },
        { ...meta("bench-module"), type: "CredentialMinted", principal: { kind: "module", name: "broker" }, user: busUser("module", "broker"), nkey: brokerModule.nkey, sealed: brokerModule.sealed, address: server.url },
      ] as MeshEvent[],
    }));
    const names = Array.from({ length: nodes }, (_, i) => `node-${i}`);
    for (let start = 0; start < nodes; start += 1000) {
      const id = `bench-nodes-${start}`;
      const events: MeshEvent[] = [];
      for (const node of names.slice(start, start + 1000)) {
        events.push({ ...meta(id), type: "NodeEnrolled", node, publicKey: newNodeKeyPair().publicKey });
        events.push({ ...meta(id), type: "CredentialMinted", principal: { kind: "node", name: node }, user: busUser("node", node), nkey: newUserKey().publicKey, address: server.url });
        events.push({ ...meta(id), type: "ModuleAssigned", module: "agent", node });
        if (node === names[0]) events.push({ ...meta(id), type: "ModuleAssigned", module: "broker", node });
      }
      const result = await catalogue.transact(id, () => ({ ok: true, entity: { kind: "bench", id: `nodes-${start}` }, events }));
      if (!result.ok) throw new Error(result.refusal.message);
    }

    const compose = { controllerSubmits: ["mesh-build"] };
    const jsm = await jetstreamManager(nc);
    let t = performance.now();
    const raiseMemo = newRaiseMemo(); // the controller keeps one from its start (main.ts)
    const raised = await raiseMesh(jsm, catalogue.state, compose, { memo: raiseMemo, nc });
    const raiseMs = performance.now() - t;
    if (raised.refused.length > 0) throw new Error(`raise refused ${raised.refused.length} objects`);

    const log = { info: () => undefined, error: (line: string) => console.error(line) };
    t = performance.now();
    let cpuStart = process.cpuUsage();
    const steps: Record<string, number> = {};
    const sealCache = new Map<string, string>();
    const compositionMemo = newCompositionMemo(); // the controller keeps one from its start (main.ts)
    const report = await push({ nc, catalogue, meshKey, compose, log, newId: () => `bench-push-${nodes}`, timings: steps, sealCache, raiseMemo, compositionMemo });
    for (const key of Object.keys(steps)) steps[key] = Math.round(steps[key]!);
    const pushMs = performance.now() - t;
    const pushCpu = cpuSince(cpuStart);
    const sent = report.nodes.filter((n) => n.outcome === "sent").length;
    if (sent !== nodes) throw new Error(`push sent ${sent} of ${nodes}`);
    // The row measures a whole push: every principal on the list, the list sent to its holder.
    if (report.userList || report.leftOut.length > 0) {
      throw new Error(`push bench: the user list was not whole: ${report.userList?.message ?? `${report.leftOut.length} principals left out`}`);
    }

    // The raw reference: the same payloads (as the first push sent them: the declarations and the
    // holder's user-list parts, in the order of the stream), same window, nothing else.
    const js = jetstream(nc);
    const consumer = await js.consumers.get(CONTROL_STREAM);
    const stored = (await jsm.streams.info(CONTROL_STREAM)).state.messages;
    const payloads: Array<{ subject: string; data: Uint8Array }> = [];
    const messages = await consumer.fetch({ max_messages: stored, expires: 10_000 });
    for await (const m of messages) {
      payloads.push({ subject: m.subject, data: m.data });
      if (payloads.length >= stored) break;
    }
    const bytes = payloads.reduce((sum, p) => sum + p.data.length, 0) / Math.max(1, payloads.length);

    // Then, in alternating rounds so drift in the machine's load hits both alike: the raw publish,
    // and a push again naming every node (sent though unchanged) with the controller's warm seal
    // cache. Medians of the rounds (one sample each varied from 0.65x to 1.2x between runs).
    const rounds: Array<{ rawMs: number; rawCpu: number; againMs: number; againCpu: number; steps: Record<string, number> }> = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      t = performance.now();
      cpuStart = process.cpuUsage();
      for (let start = 0; start < payloads.length; start += PUBLISH_WINDOW) {
        await Promise.all(payloads.slice(start, start + PUBLISH_WINDOW).map((p) => js.publish(p.subject, p.data)));
      }
      const rawMs = performance.now() - t;
      const rawCpu = cpuSince(cpuStart);
      t = performance.now();
      cpuStart = process.cpuUsage();
      const againSteps: Record<string, number> = {};
      const again = await push({ nc, catalogue, meshKey, compose, log, newId: () => `bench-again-${nodes}-${round}`, timings: againSteps, sealCache, raiseMemo, compositionMemo }, { nodes: names });
      const againMs = performance.now() - t;
      const againCpu = cpuSince(cpuStart);
      const againSent = again.nodes.filter((n) => n.outcome === "sent").length;
      if (againSent !== nodes) {
        const other = again.nodes.find((n) => n.outcome !== "sent");
        throw new Error(`push again sent ${againSent} of ${nodes}; e.g. ${JSON.stringify(other)}`);
      }
      rounds.push({ rawMs, rawCpu, againMs, againCpu, steps: againSteps });
    }
    const rawMs = median(rounds.map((r) => r.rawMs));
    const rawCpu = median(rounds.map((r) => r.rawCpu));
    const againMs = median(rounds.map((r) => r.againMs));
    const againCpu = median(rounds.map((r) => r.againCpu));
    const againSteps = rounds.find((r) => r.againMs === againMs)!.steps;
    return {
      cpu: { push: pushCpu, again: againCpu, raw: rawCpu }, againSteps: Object.fromEntries(Object.entries(againSteps).map(([k, v]) => [k, Math.round(v)])),
      steps, againMs: Math.round(againMs), againRatio: Number((rawMs / againMs).toFixed(2)), nodes, raiseMs: Math.round(raiseMs), pushMs: Math.round(pushMs), pushPerSecond: Math.round((nodes / pushMs) * 1000),
      rawMs: Math.round(rawMs), rawPerSecond: Math.round((payloads.length / rawMs) * 1000),
      ratio: Number((rawMs / pushMs).toFixed(2)), bytes: Math.round(bytes),
    };
  } finally {
    await nc.close();
    await server.stop();
  }
}

export type BrokerRow = {
  users: number; listBytes: number; parts: number; raiseMs: number; pushMs: number; toReloadedMs: number; reloadMs: number | null;
  steps: Record<string, number>; newUserConnects: boolean; raisedInPush: { created: number; updated: number };
};

/** One broker measurement (see the module comment): N generated nodes, the hub's host agent for real. */
export async function broker(users: number): Promise<BrokerRow> {
  const dir = mkdtempSync(join(tmpdir(), "mesh-bench-broker-"));
  const hubDir = join(dir, "hub-state");
  const hub = initHostKeys(hubDir);
  const meshKey = newMeshKey();
  // Every principal is an nkey user (R63): a key pair each; `key` keeps what the records hold.
  const fresh = () => newFreshSecret((seed) => sealWithMeshKey(meshKey, seed));
  const key = (s: { nkey: string; sealed: string }) => ({ nkey: s.nkey, sealed: s.sealed });
  const nkeyAuth = (seed: string) => nkeyAuthenticator(() => new TextEncoder().encode(seed));
  const controllerSecret = fresh();
  const hubSecret = fresh();
  const compose = { controllerSubmits: [] as string[] };
  // The bus starts with no users it knows but an admin that writes the records; the first list is composed below.
  const adminSecret = fresh();
  const admin = { user: "bench-admin", nkey: adminSecret.nkey, permissions: { publish: { allow: [">"] }, subscribe: { allow: [">"] } }, principal: { kind: "controller" as const, name: CONTROLLER_NAME } };
  const server = await startNatsServer({
    dir,
    files: { "users.conf": renderUserList({ users: [admin] }) },
    config: [`include "users.conf"`, `pid_file: "${join(dir, "server.pid")}"`].join("\n"),
  });
  let nc = await connect({ servers: server.url, authenticator: nkeyAuth(adminSecret.seed) });
  let host: ReturnType<typeof startHost> | undefined;
  try {
    const catalogue0 = await openCatalogue(nc);
    const genesis = await catalogue0.transact(GENESIS_COMMAND_ID, (state) => decideGenesis(state, {
      genesisAddress: server.url, fingerprint: Array(32).fill("AB").join(":"), bootstrapUser: BOOTSTRAP_USER, operator: "bench",
      operatorSecret: newFreshSecret((seed) => sealWithMeshKey(meshKey, seed)), now: at(),
    }));
    if (!genesis.ok) throw new Error(genesis.refusal.message);
    const meta = (commandId: string) => ({ actor: "operator-bench", commandId, at: at() });
    const brokerSecret = fresh();
    await catalogue0.transact("bench-broker", () => ({
      ok: true,
      entity: { kind: "module", id: "broker" },
      events: [
        { ...meta("bench-broker"), type: "CredentialMinted", principal: { kind: "controller", name: CONTROLLER_NAME }, user: BOOTSTRAP_USER, ...key(controllerSecret), address: server.url },
        { ...meta("bench-broker"), type: "NodeEnrolled", node: "hub", publicKey: hub.publicKey },
        { ...meta("bench-broker"), type: "CredentialMinted", principal: { kind: "node", name: "hub" }, user: busUser("node", "hub"), nkey: hubSecret.nkey, address: server.url },
        { ...meta("bench-broker"), type: "ModuleRegistered", manifest: { name: "broker", version: "2.9.10", description: "", run: { command: ["nats-server"] }, seats: { [BROKER_SEAT]: { protocol: "nats", accepts: [], emits: [] } }, claims: [BROKER_SEAT], uses: [], follows: [], tools: [] } },
        { ...meta("bench-broker"), type: "ModuleIssued", module: "broker" },
        { ...meta("bench-broker"), type: "CredentialMinted", principal: { kind: "module", name: "broker" }, user: busUser("module", "broker"), ...key(brokerSecret), address: server.url },
        { ...meta("bench-broker"), type: "ModuleAssigned", module: "broker", node: "hub" },
      ] as MeshEvent[],
    }));
    // The first list (controller, operator, hub, broker module): the controller dials with its own credential from here on.
    const first = composeBusUsers(catalogue0.state, compose);
    if (!first.ok) throw new Error(`first list refused: ${first.refusal.code}`);
    writeFileSync(join(dir, "users.conf"), renderUserList({ users: [admin, ...first.users] }));
    const monitorUrl = `http://127.0.0.1:${server.monitorPort}`;
    const loadedBefore = await configLoadTime(monitorUrl);
    server.reload();
    while ((await configLoadTime(monitorUrl)) === loadedBefore) await new Promise((resolve) => setTimeout(resolve, 20));
    await nc.close();
    const controllerUser = BOOTSTRAP_USER;
    for (let attempt = 0; ; attempt += 1) {
      try {
        nc = await connect({ servers: server.url, authenticator: nkeyAuth(controllerSecret.seed), inboxPrefix: inboxPrefix(controllerUser) });
        break;
      } catch (error) {
        if (attempt > 50) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    // Right after a reload nats-server 2.9.10 can answer $JS.API with "no responders" for a moment.
    for (let attempt = 0; ; attempt += 1) {
      try {
        await (await jetstreamManager(nc)).getAccountInfo();
        break;
      } catch (error) {
        if (attempt > 100) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    const catalogue = await openCatalogue(nc);
    const names = Array.from({ length: users }, (_, i) => `n${i}`);
    let lastNodeSeed = "";
    for (let start = 0; start < users; start += 500) {
      const id = `bench-users-${start}`;
      const events: MeshEvent[] = [];
      for (const node of names.slice(start, start + 500)) {
        events.push({ ...meta(id), type: "NodeEnrolled", node, publicKey: hub.publicKey });
        const nodeKey = newUserKey(); // generated on the node in a mesh (R64): the records hold the public key alone
        lastNodeSeed = nodeKey.seed;
        events.push({ ...meta(id), type: "CredentialMinted", principal: { kind: "node", name: node }, user: busUser("node", node), nkey: nodeKey.publicKey, address: server.url });
      }
      const result = await catalogue.transact(id, () => ({ ok: true, entity: { kind: "bench", id: `users-${start}` }, events }));
      if (!result.ok) throw new Error(result.refusal.message);
    }
    const jsm = await jetstreamManager(nc);
    let t = performance.now();
    const raiseMemo = newRaiseMemo(); // the controller keeps one from its start (main.ts)
    const raised = await raiseMesh(jsm, catalogue.state, compose, { memo: raiseMemo, nc });
    const raiseMs = performance.now() - t;
    if (raised.refused.length > 0) throw new Error(`raise refused ${raised.refused.length} objects`);

    const lines: string[] = [];
    host = startHost({
      stateDir: hubDir, node: "hub",
      credential: { address: server.url, user: busUser("node", "hub"), seed: hubSecret.seed },
      bus: { includeFile: join(dir, "users.conf"), configFile: server.configFile, pid: join(dir, "server.pid"), monitorUrl: `http://127.0.0.1:${server.monitorPort}`, reloadTimeoutMs: 120_000 },
      log: (line) => lines.push(line),
      backoff: { initialMs: 50, maxMs: 500 },
    });
    for (let i = 0; !host.bound(); i += 1) {
      if (i > 200) throw new Error(`the hub's host did not bind: ${lines.at(-1) ?? ""}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }

    const log = { info: () => undefined, error: (line: string) => console.error(line) };
    const steps: Record<string, number> = {};
    t = performance.now();
    const report = await push({ nc, catalogue, meshKey, compose, log, newId: () => `bench-broker-${users}`, timings: steps, raiseMemo });
    const pushMs = performance.now() - t;
    const sent = report.nodes.find((n) => n.node === "hub");
    if (sent?.outcome !== "sent" || !sent.digest) throw new Error(`the hub was not sent: ${JSON.stringify(sent)}`);
    const applied = await host.waitForReport(sent.digest, 300_000);
    const toReloadedMs = performance.now() - t;
    if (!applied.ok) throw new Error(`the hub did not apply its list: ${applied.error}`);
    for (const key of Object.keys(steps)) steps[key] = Math.round(steps[key]!);
    const reloaded = lines.map((l) => /user list reloaded in (\d+) ms/.exec(l)?.[1]).filter((x) => x !== undefined).at(-1);
    const listBytes = Buffer.byteLength(readFileSync(join(dir, "users.conf"), "utf8"));
    let newUserConnects = false;
    try {
      const probe = await connect({ servers: server.url, authenticator: nkeyAuth(lastNodeSeed), inboxPrefix: inboxPrefix(busUser("node", names.at(-1)!)), reconnect: false });
      await probe.close();
      newUserConnects = true;
    } catch {
      newUserConnects = false;
    }
    return {
      users: users + 4, listBytes, parts: Math.ceil(listBytes / (256 * 1024)), raiseMs: Math.round(raiseMs), pushMs: Math.round(pushMs),
      toReloadedMs: Math.round(toReloadedMs), reloadMs: reloaded === undefined ? null : Number(reloaded), steps, newUserConnects,
      raisedInPush: { created: report.raised.created, updated: report.raised.updated },
    };
  } finally {
    await host?.stop();
    await nc.close().catch(() => undefined);
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Runs the bench; `--nodes 1000,10000` picks the declaration sizes, `--users 10000` the broker's
 * list sizes (either alone runs only that bench; neither runs both at defaults), `--json` prints
 * JSON rows.
 */
export async function run(args: string[]): Promise<void> {
  const sizesArg = option(args, "--nodes");
  const usersArg = option(args, "--users");
  const parse = (text: string) => text.split(",").map(Number).filter((n) => Number.isInteger(n) && n > 0);
  const sizes = sizesArg !== undefined ? parse(sizesArg) : usersArg !== undefined ? [] : [1000, 10000];
  const userSizes = usersArg !== undefined ? parse(usersArg) : sizesArg !== undefined ? [] : [10000];
  const rows: Row[] = [];
  for (const size of sizes) rows.push(await one(size));
  const brokerRows: BrokerRow[] = [];
  for (const size of userSizes) brokerRows.push(await broker(size));
  if (args.includes("--json")) {
    console.log(JSON.stringify({ declarations: rows, broker: brokerRows }, null, 2));
    return;
  }
  if (rows.length > 0) {
    console.log("nodes   raise(ms)  push(ms)  push decl/s  raw(ms)  raw msg/s  ratio  bytes/decl");
    for (const r of rows) {
      console.log(
        `${String(r.nodes).padEnd(7)} ${String(r.raiseMs).padStart(9)} ${String(r.pushMs).padStart(9)} ${String(r.pushPerSecond).padStart(12)} ${String(r.rawMs).padStart(8)} ${String(r.rawPerSecond).padStart(10)} ${String(r.ratio).padStart(6)} ${String(r.bytes).padStart(11)}`,
      );
    }
    for (const r of rows) console.log(`${r.nodes} nodes, push again (all named, warm seal cache): ${r.againMs} ms, ratio ${r.againRatio}`);
    for (const r of rows) console.log(`${r.nodes} nodes, push steps (ms): ${Object.entries(r.steps).map(([k, v]) => `${k} ${v}`).join(", ")} (seal runs inside publish)`);
    for (const r of rows) console.log(`${r.nodes} nodes, push again steps (ms): ${Object.entries(r.againSteps).map(([k, v]) => `${k} ${v}`).join(", ")}`);
    for (const r of rows) console.log(`${r.nodes} nodes, this process's cpu (ms): push ${r.cpu.push}, again ${r.cpu.again}, raw ${r.cpu.raw}`);
    console.log("goal: ratio ≥ 0.9 (issue 13: a raw pipelined JetStream publish of the same payloads, ms, over the push's ms)");
  }
  for (const r of brokerRows) {
    console.log(
      `broker: ${r.users} users, list ${(r.listBytes / 1024 / 1024).toFixed(2)} MiB in ${r.parts} parts: push ${r.pushMs} ms, ` +
        `push start to the list reloaded on the bus ${r.toReloadedMs} ms (the reload itself ${r.reloadMs ?? "?"} ms), ` +
        `raise ${r.raiseMs} ms (before), a listed user connects: ${r.newUserConnects ? "yes" : "NO"}`,
    );
    console.log(`broker: ${r.users} users, push steps (ms): ${Object.entries(r.steps).map(([k, v]) => `${k} ${v}`).join(", ")}; the push's raise created ${r.raisedInPush.created}, updated ${r.raisedInPush.updated}`);
  }
}
