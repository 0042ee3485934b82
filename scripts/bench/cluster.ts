/**
 * `npm run bench -- cluster [--count N] [--json]` (issue 14): the mesh on a three-server JetStream
 * cluster (test/support/natsCluster.ts, file storage, three replicas). In one run, on one cluster:
 *
 * - raw: sequential publish+ack to a stream of three replicas, `count` round trips;
 * - command: the command round trip (assign / unassign alternating, each appends one fenced commit
 *   to CATALOGUE with three replicas), `count` round trips;
 * - failover: the server leading CATALOGUE is killed (SIGKILL); from then, commands are sent (an
 *   unanswered one again with the same command id, as the CLI does) until the first is
 *   acknowledged: that time, beside the time the records' stream took to elect a new leader.
 *
 * Times in milliseconds; p50 of the round trips after a warm-up.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { enrolRequest } from "../../test/support/enrol.ts";
import { randomUUID } from "node:crypto";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, StorageType } from "@nats-io/jetstream";
import { startNatsCluster } from "../../test/support/natsCluster.ts";
import { TEST_FINGERPRINT } from "../../test/support/commandMesh.ts";
import { openCatalogue } from "../../src/records/catalogue.ts";
import { keptMark } from "../../src/bootstrap/recordsMark.ts";
import { serveCommands } from "../../src/serve/server.ts";
import { sendCommand } from "../../src/client/send.ts";
import { newMeshKey, openWithMeshKey, sealWithMeshKey } from "../../src/crypto/secrets.ts";
import { CATALOGUE_STREAM, CONTROLLER_NAME, busUser, inboxPrefix } from "../../src/names.ts";
import { option } from "./args.ts";

/** What one run measured. */
export type ClusterResult = {
  count: number;
  /** p50 of raw R3 publish+ack, ms. */
  rawP50: number;
  /** p50 of the command round trip on the cluster, ms. */
  commandP50: number;
  /** Server killed → first command acknowledged, ms. */
  failoverMs: number;
  /** Server killed → CATALOGUE reports another leader, ms (same run). */
  electionMs: number;
  /** The killed server's name. */
  killed: string;
};

const OPERATOR = "operator-bench";

function p50(samples: readonly number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return Math.round(sorted[Math.floor(sorted.length / 2)]! * 1000) / 1000;
}

/** Measures the cluster row (see the module comment). Throws when a command is refused. */
export async function measureCluster(count: number): Promise<ClusterResult> {
  if (!Number.isInteger(count) || count < 10) throw new Error("--count takes a whole number of at least 10");
  const warmup = Math.min(100, Math.floor(count / 10));
  const cluster = await startNatsCluster(3);
  const stateDir = mkdtempSync(join(tmpdir(), "mesh-bench-state-"));
  const connections: NatsConnection[] = [];
  const dial = async (user: string): Promise<NatsConnection> => {
    const nc = await connect({ servers: cluster.urls, inboxPrefix: inboxPrefix(user), name: `bench-${user}`, reconnectTimeWait: 100, maxReconnectAttempts: -1 });
    connections.push(nc);
    return nc;
  };
  try {
    const controllerUser = busUser("controller", CONTROLLER_NAME);
    const nc = await dial(controllerUser);
    // As the controller runs: the records' mark kept in its state folder, written on every advance (R43).
    const catalogue = await openCatalogue(nc, { replicas: 3, ...keptMark(stateDir) });
    const created = await catalogue.transact("genesis", () => ({
      ok: true,
      entity: { kind: "mesh", id: "mesh" },
      events: [{
        type: "MeshCreated", actor: "installer", commandId: "genesis", at: new Date().toISOString(),
        genesisAddress: cluster.urls[0]!.replace("nats://", "tls://"), fingerprint: TEST_FINGERPRINT, bootstrapUser: controllerUser,
      }],
    }));
    if (!created.ok) throw new Error(`genesis refused: ${created.refusal.message}`);
    const meshKey = newMeshKey();
    const commands = serveCommands(nc, catalogue, {
      sealSecret: (password) => sealWithMeshKey(meshKey, password),
      openSecret: (sealed) => openWithMeshKey(meshKey, sealed),
      now: () => new Date(),
      newId: () => randomUUID(),
      log: { info: () => undefined, error: () => undefined },
    });
    const client = await dial(OPERATOR);
    const ask = async (verb: string, body: Record<string, unknown>, timeoutMs = 10_000) => {
      const reply = await sendCommand(client, OPERATOR, verb, body, { timeoutMs });
      if (!reply.ok) throw new Error(`${verb} refused during the bench: ${reply.error.code}: ${reply.error.message}`);
    };
    await ask("node.enrol", enrolRequest("alpha"));
    await ask("module.register", { manifest: { name: "bench", version: "1" } });

    // Raw: a stream of three replicas of its own, file storage, a body the size of a commit.
    const jsm = await jetstreamManager(client);
    const js = jetstream(client);
    await jsm.streams.add({ name: "BENCH_RAW_R3", subjects: ["bench.raw.>"], storage: StorageType.File, num_replicas: 3 });
    const body = new TextEncoder().encode(JSON.stringify({
      commandId: randomUUID(), entity: { kind: "module", id: "bench" },
      events: [{ type: "ModuleAssigned", module: "bench", node: "alpha", actor: OPERATOR, commandId: randomUUID(), at: new Date().toISOString() }],
    }));
    const raw: number[] = [];
    for (let i = 0; i < warmup + count; i += 1) {
      const started = performance.now();
      await js.publish("bench.raw.module.bench", body);
      if (i >= warmup) raw.push(performance.now() - started);
    }
    const command: number[] = [];
    let assigned = false;
    for (let i = 0; i < warmup + count; i += 1) {
      const started = performance.now();
      await ask(assigned ? "unassign" : "assign", { module: "bench", node: "alpha" });
      assigned = !assigned;
      if (i >= warmup) command.push(performance.now() - started);
    }

    // Failover: kill the records' leader, then send until a command is acknowledged.
    const leader = (await jsm.streams.info(CATALOGUE_STREAM)).cluster?.leader;
    if (!leader) throw new Error("CATALOGUE has no leader");
    const killedAt = performance.now();
    await cluster.byName(leader).kill();
    let electionMs = -1;
    const election = (async () => {
      for (let i = 0; i < 600 && electionMs < 0; i += 1) {
        const now = await jsm.streams.info(CATALOGUE_STREAM).then((info) => info.cluster?.leader, () => undefined);
        if (now && now !== leader) electionMs = performance.now() - killedAt;
        else await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const verb = assigned ? "unassign" : "assign";
    const commandId = randomUUID();
    let failoverMs = -1;
    while (performance.now() - killedAt < 120_000) {
      const reply = await sendCommand(client, OPERATOR, verb, { module: "bench", node: "alpha", commandId }, { timeoutMs: 2_000 }).catch(() => null);
      if (reply?.ok) {
        failoverMs = performance.now() - killedAt;
        break;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    await election;
    await commands.stop();
    if (failoverMs < 0) throw new Error("no command was acknowledged within 120 s of the kill");
    return { count, rawP50: p50(raw), commandP50: p50(command), failoverMs: Math.round(failoverMs), electionMs: Math.round(electionMs), killed: leader };
  } finally {
    await Promise.all(connections.map((c) => c.close().catch(() => undefined)));
    await cluster.stop();
    rmSync(stateDir, { recursive: true, force: true });
  }
}

export async function run(args: string[]): Promise<void> {
  const result = await measureCluster(Number(option(args, "--count") ?? 1000));
  if (args.includes("--json")) console.log(JSON.stringify(result, null, 2));
  else {
    console.log(`raw R3 publish+ack p50 ${result.rawP50} ms; command p50 on the cluster ${result.commandP50} ms (${(result.commandP50 / result.rawP50).toFixed(2)}x raw), ${result.count} round trips each`);
    console.log(`failover: ${result.killed} (the records' leader) killed → first command acknowledged ${result.failoverMs} ms later; a new leader was elected after ${result.electionMs} ms`);
  }
}
