/**
 * `npm run bench -- failover [--rounds N] [--nodes N] [--trace] [--json]` (issue 26, R77): on a three-server
 * cluster (file storage, three replicas), an active controller in a process of its own and a
 * standby waiting for the lease, both run as `mesh up` runs them (runController), with the lease
 * the controller ships with:
 *
 * - records-leader: the server leading CATALOGUE is killed (SIGKILL);
 * - controller: the active controller's process is killed (SIGKILL);
 *
 * then one command (an enrolment with its own command id, sent again with the same id until it is
 * acknowledged, as the CLI does) measures the kill → first acknowledged command. Each kind runs
 * `rounds` times (default 3), each on a fresh cluster; the median is the figure, every sample is
 * kept. Beside it, from the same round: when the records' stream had a new leader (asked on a
 * connection to a survivor), or when the standby took the lease. `--trace` prints the standby's log
 * lines with their time since the kill.
 */
import { randomUUID } from "node:crypto";
import type { ChildProcess } from "node:child_process";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { enrolRequest } from "../../test/support/enrol.ts";
import { startNatsCluster, type NatsCluster } from "../../test/support/natsCluster.ts";
import { controllerFixture, type ControllerFixture } from "../../test/support/controller.ts";
import { waitFor } from "../../test/support/natsServer.ts";
import { askAs } from "../../test/support/client.ts";
import { join } from "node:path";
import { parseControllerConfig } from "../../src/config.ts";
import { runController, type Running } from "../../src/up/controllerDaemon.ts";
import { CATALOGUE_STREAM } from "../../src/names.ts";
import { controllerEnvPaths, startControllerChild, writeControllerEnv } from "./controllerChild.ts";
import { option } from "./args.ts";

export type FailoverKind = "records-leader" | "controller";

/** One round: kill → first acknowledged command, and the round's own reference time. */
export type FailoverSample = {
  kind: FailoverKind;
  /** Kill → first acknowledged command, ms. */
  ms: number;
  /** records-leader: kill → CATALOGUE reports another leader; controller: kill → the standby holds the lease (ms; -1 unseen). */
  referenceMs: number;
};

/** The medians of each kind and every sample. */
export type FailoverResult = { rounds: number; nodes: number; leaseMs: number; medians: Record<FailoverKind, number>; references: Record<FailoverKind, number>; samples: FailoverSample[] };

/** The operator the fixture's connection sends as. */
const OPERATOR = "operator-test";
/** The reply timeout of each send after the kill (the CLI's is 10 s; shorter, so a lost one is sent again sooner). */
const SEND_TIMEOUT_MS = 2_000;

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Sends one enrolment (same command id every time) until it is acknowledged; ms from `since`. */
async function firstAcknowledged(fixture: ControllerFixture, since: number): Promise<number> {
  const body = { ...enrolRequest(`after-kill-${randomUUID().slice(0, 8)}`), commandId: randomUUID() };
  while (performance.now() - since < 120_000) {
    const reply = await askAs(fixture.operator, OPERATOR, "node.enrol", body, SEND_TIMEOUT_MS).catch(() => null);
    if (reply?.ok) return performance.now() - since;
    await pause(50);
  }
  throw new Error("no command was acknowledged within 120 s of the kill");
}

/** Kill → CATALOGUE has a leader other than `old`, asked on a fresh connection to a survivor. */
async function electionAfter(cluster: NatsCluster, old: string, since: number): Promise<number> {
  const survivor = cluster.servers.find((_, i) => `s${i + 1}` !== old)!;
  const nc = await connect({ servers: survivor.url });
  try {
    const jsm = await jetstreamManager(nc, { checkAPI: false, timeout: 500 });
    while (performance.now() - since < 60_000) {
      const leader = await jsm.streams.info(CATALOGUE_STREAM).then((info) => info.cluster?.leader, () => undefined);
      if (leader && leader !== old) return performance.now() - since;
      await pause(50);
    }
    return -1;
  } finally {
    await nc.close();
  }
}

/** One round of `kind` on a fresh cluster with `nodes` nodes enrolled before the kill. */
async function round(kind: FailoverKind, nodes: number, trace?: (line: string) => void): Promise<FailoverSample & { leaseMs: number }> {
  const cluster = await startNatsCluster(3);
  let fixture: ControllerFixture | undefined;
  let active: ChildProcess | undefined;
  const abort = new AbortController();
  let standby: Promise<Running | undefined> = Promise.resolve(undefined);
  try {
    fixture = await controllerFixture({ url: cluster.urls[0]! }, { addresses: cluster.urls, replicas: 3 });
    const leaseMs = parseControllerConfig(fixture.env).leaseMs;
    const envFile = join(fixture.dir, "controller.env");
    writeControllerEnv(envFile, fixture.env);
    active = await startControllerChild(envFile);
    for (let i = 0; i < nodes; i += 1) await fixture.enrol(`node-${i}`);
    let standingBy = false;
    let tookLeaseAt = -1;
    let killedAt = Number.POSITIVE_INFINITY;
    const log = (line: string) => {
      if (/standing by/.test(line)) standingBy = true;
      if (/holding the controllers' lease/.test(line)) tookLeaseAt = performance.now() - killedAt;
      trace?.(`standby +${Math.round(performance.now() - killedAt)} ms: ${line}`);
    };
    // As `mesh up` runs it: a start that fails for a passing bus condition stands by again.
    standby = runController(controllerEnvPaths(envFile), log, { name: "standby", signal: abort.signal })
      .catch((error: unknown) => { trace?.(`standby ended: ${String(error)}`); return undefined; });
    await waitFor(() => standingBy, { timeoutMs: 60_000, name: "the standby waiting for the lease" });

    const jsm = await jetstreamManager(fixture.operator, { checkAPI: false });
    const leader = (await jsm.streams.info(CATALOGUE_STREAM)).cluster?.leader;
    if (!leader) throw new Error("CATALOGUE has no leader");
    killedAt = performance.now();
    if (kind === "controller") active.kill("SIGKILL");
    else await cluster.byName(leader).kill();
    const election = kind === "records-leader" ? electionAfter(cluster, leader, killedAt) : Promise.resolve(-1);
    const ms = await firstAcknowledged(fixture, killedAt);
    const elected = await election;
    return { kind, ms: Math.round(ms), referenceMs: Math.round(kind === "controller" ? tookLeaseAt : elected), leaseMs };
  } finally {
    active?.kill("SIGKILL");
    abort.abort();
    await (await standby)?.stop().catch(() => undefined);
    await fixture?.close();
    await cluster.stop();
  }
}

/** Measures `rounds` rounds of each kind (see the module comment). Throws when a round fails. */
export async function measureFailover(rounds = 3, nodes = 20, log: (line: string) => void = () => undefined, trace?: (line: string) => void): Promise<FailoverResult> {
  const samples: FailoverSample[] = [];
  let leaseMs = 0;
  for (let i = 0; i < rounds; i += 1) {
    for (const kind of ["records-leader", "controller"] as const) {
      const { leaseMs: lease, ...sample } = await round(kind, nodes, trace);
      leaseMs = lease;
      samples.push(sample);
      log(`failover round ${i + 1}, ${kind}: ${sample.ms} ms (reference ${sample.referenceMs} ms)`);
    }
  }
  const of = (kind: FailoverKind) => samples.filter((s) => s.kind === kind);
  return {
    rounds, nodes, leaseMs, samples,
    medians: { "records-leader": median(of("records-leader").map((s) => s.ms)), controller: median(of("controller").map((s) => s.ms)) },
    references: { "records-leader": median(of("records-leader").map((s) => s.referenceMs)), controller: median(of("controller").map((s) => s.referenceMs)) },
  };
}

export async function run(args: string[]): Promise<void> {
  const result = await measureFailover(Number(option(args, "--rounds") ?? 3), Number(option(args, "--nodes") ?? 20), (line) => console.error(line),
    args.includes("--trace") ? (line) => console.error(line) : undefined);
  if (args.includes("--json")) {
    console.log(JSON.stringify(result, null, 2));
    return;
  }
  for (const kind of ["records-leader", "controller"] as const) {
    const all = result.samples.filter((s) => s.kind === kind).map((s) => s.ms).join(", ");
    console.log(`${kind} killed → first command acknowledged: median ${result.medians[kind]} ms of ${all} (goal ≤ 3000 ms); reference ${result.references[kind]} ms`);
  }
}
