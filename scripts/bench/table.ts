/**
 * `npm run bench` (or `npm run bench -- table [--quick] [--only a,b] [--json]`): issue 13's
 * performance table. Every row is measured in this run against its raw JetStream baseline on the
 * same server (the machine is shared and noisy, so absolute times mean little alone), and printed
 * as `bench | measured | goal | met?`.
 *
 * Rows (names for --only): command, fenced, replay, start, compose, push, broker, fleet, memory, cluster (issue 14),
 * cli (issue 29: cli.ts), failover (issue 26: median of 3 rounds, 1 with --quick), ui (issue 30: ui.ts,
 * `--ui-nodes 10000`, 1000 with --quick; by default only where /usr/bin/chromium is). `--quick` shrinks the sizes (the goals then speak of other sizes:
 * the row says which were used) and leaves out `broker`. `fleet` (fleet.ts: a user-list reload and a
 * reconnect storm with N real connections) runs at `--fleet 1000` by default, `--fleet 1000,10000`
 * on request (200 with --quick); `memory` (memory.ts: the controller's RSS in a fresh child process)
 * at `--memory-nodes 10000` (1000 with --quick). Exits 1 when a measured row misses its goal.
 */
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { startNatsServer, type NatsServer } from "../../test/support/natsServer.ts";
import { startInChild } from "./startChild.ts";
import { generateHistory, publishCommits } from "../../test/support/history.ts";
import { openCatalogue, replay } from "../../src/records/catalogue.ts";
import { openSnapshotStores, saveSnapshot } from "../../src/records/snapshots.ts";
import { catalogueSubject } from "../../src/names.ts";
import { initialState, startFold, type SequencedCommit, type State } from "../../src/projections/index.ts";
import type { Commit } from "../../src/events/index.ts";
import { measureCommands } from "./commands.ts";
import { measure as measureCompose } from "./compose.ts";
import { one as measurePush, broker as measureBroker } from "./push.ts";
import { rawRead } from "./records.ts";
import { measureFleet, type FleetRow, type FleetSide } from "./fleet.ts";
import { measureMemory } from "./memory.ts";
import { measureCluster } from "./cluster.ts";
import { measureCli, type Side } from "./cli.ts";
import { measureFailover, type FailoverKind } from "./failover.ts";
import { CHROMIUM, measureUi } from "./ui.ts";
import { existsSync } from "node:fs";
import { option } from "./args.ts";

/** One line of the table: what was measured, against what, the goal and whether it is met. */
export type TableRow = { bench: string; measured: string; baseline: string; goal: string; met: boolean | null };

const ms = (x: number) => `${x < 10 ? x.toFixed(2) : Math.round(x)} ms`;
const s = (x: number) => `${(x / 1000).toFixed(2)} s`;
const ratio = (x: number) => `${x.toFixed(2)}x`;

/** A fresh server and a history laid into its CATALOGUE on demand (events counted as generated). */
async function historyServer(maxEvents: number): Promise<{
  server: NatsServer; nc: NatsConnection; dial(): Promise<NatsConnection>; fillTo(events: number): Promise<void>; state(): State; close(): Promise<void>;
}> {
  const server = await startNatsServer({ config: "max_payload: 1048576" });
  const connections: NatsConnection[] = [];
  const dial = async () => {
    const nc = await connect({ servers: server.url });
    connections.push(nc);
    return nc;
  };
  const nc = await dial();
  await openCatalogue(nc, { useSnapshot: false }); // creates the stream and the snapshot stores
  const history = generateHistory({ seed: 1, events: maxEvents, maxNodes: 2000 });
  // The same commits folded in memory as they are laid down, for a snapshot without a replay.
  const fold = startFold(initialState);
  let sequence = 0;
  let events = 0;
  return {
    server, nc, dial,
    async fillTo(target) {
      while (events < target) {
        const chunk: Commit[] = [];
        while (events < target && chunk.length < 20_000) {
          const next = history.next();
          if (next.done) break;
          events += next.value.events.length;
          chunk.push(next.value);
        }
        if (chunk.length === 0) break;
        await publishCommits(nc, chunk);
        fold.add(chunk.map((commit): SequencedCommit => ({ sequence: (sequence += 1), commit })));
      }
    },
    state: () => fold.finish(),
    async close() {
      await Promise.all(connections.map((c) => c.close().catch(() => undefined)));
      await server.stop();
    },
  };
}

/**
 * Command p50 against its floor's p50 (issue 28): a raw publish+ack, then a line appended and
 * fsynced on the same disk (the records' mark, R43), then a core request/reply echo (the command's
 * hop), measured as one raw sequence. The parts' own p50s are shown beside it.
 */
async function commandRow(quick: boolean): Promise<TableRow> {
  const result = await measureCommands(quick ? 500 : 2000);
  const [raw, command, echo, mark, floor] = result.rows;
  const x = command!.p50 / floor!.p50;
  return {
    bench: `command p50 / floor p50 (raw publish+ack, fsynced line append, request/reply echo, in sequence), ${result.count} round trips`,
    measured: `${ratio(x)} (${ms(command!.p50)}; ${ratio(command!.p50 / raw!.p50)} raw alone)`,
    baseline: `floor ${ms(floor!.p50)} (raw ${ms(raw!.p50)}, append ${ms(mark!.p50)} as the mark writes it, echo ${ms(echo!.p50)})`,
    goal: "≤ 1.2x", met: x <= 1.2,
  };
}

/**
 * Sequential fenced appends (Catalogue.transact) against sequential raw publish+ack of the same
 * kind of commits on the same stream, in alternating blocks so drift in the machine's load hits both.
 */
async function fencedRow(quick: boolean): Promise<TableRow> {
  const count = quick ? 1000 : 3000;
  const block = 250;
  const server = await startNatsServer();
  const nc = await connect({ servers: server.url });
  try {
    const catalogue = await openCatalogue(nc);
    const js = jetstream(nc);
    const history = generateHistory({ seed: 7, events: count * 8, maxNodes: 500 });
    const next = () => history.next().value as Commit;
    // Warm both paths a little.
    for (let i = 0; i < 50; i += 1) {
      const c = next();
      await js.publish(catalogueSubject(c.entity.kind, c.entity.id), JSON.stringify(c), { msgID: c.commandId });
    }
    await catalogue.catchUp();
    let rawMs = 0;
    let fencedMs = 0;
    for (let done = 0; done < count; done += block) {
      const raw = Array.from({ length: block }, next);
      let t = performance.now();
      for (const c of raw) await js.publish(catalogueSubject(c.entity.kind, c.entity.id), JSON.stringify(c), { msgID: c.commandId });
      rawMs += performance.now() - t;
      await catalogue.catchUp(); // the raw commits are folded outside the timing
      const fenced = Array.from({ length: block }, next);
      t = performance.now();
      for (const c of fenced) {
        const result = await catalogue.transact(c.commandId, () => ({ ok: true, entity: c.entity, events: c.events }));
        if (!result.ok || result.duplicate) throw new Error(`fenced append of ${c.commandId} did not land`);
      }
      fencedMs += performance.now() - t;
    }
    const x = rawMs / fencedMs;
    return {
      bench: `fenced append (transact) / raw publish+ack, sequential, ${count} each`,
      measured: `${ratio(x)} (${Math.round((count / fencedMs) * 1000)}/s)`,
      baseline: `raw ${Math.round((count / rawMs) * 1000)}/s`,
      goal: "≥ 0.8x", met: x >= 0.8,
    };
  } finally {
    await nc.close();
    await server.stop();
  }
}

/**
 * Replay (read, validate, fold) against a raw ordered read + JSON.parse, best of two each,
 * alternating; beside it the raw read with the validation a replay must run (R44) and no fold.
 */
async function replayRow(history: Awaited<ReturnType<typeof historyServer>>, events: number): Promise<TableRow> {
  await history.fillTo(events);
  const reader = await history.dial();
  let raw = Number.POSITIVE_INFINITY;
  let validated = Number.POSITIVE_INFINITY;
  let folded = Number.POSITIVE_INFINITY;
  let counted = 0;
  for (let round = 0; round < 2; round += 1) {
    const r = await rawRead(reader);
    raw = Math.min(raw, r.ms);
    counted = r.events;
    validated = Math.min(validated, (await rawRead(reader, true)).ms);
    const t = performance.now();
    await replay(reader);
    folded = Math.min(folded, performance.now() - t);
  }
  const x = raw / folded;
  return {
    bench: `replay (read+validate+fold) / raw read+parse, ${counted} events`,
    measured: `${ratio(x)} (${s(folded)})`,
    baseline: `raw ${s(raw)}; read+parse+validate (R44) alone ${s(validated)}, ${ratio(raw / validated)}`,
    goal: "≥ 0.8x", met: x >= 0.8,
  };
}

/**
 * A start (openCatalogue) from a snapshot at `events` events, the snapshot saved from a fold of the
 * same commits in memory. Baseline: reading the snapshot's object raw, gunzipping it and
 * JSON.parse-ing it (the same bytes, read the plainest way). Both are measured in a fresh process
 * (startChild.ts), as a controller starts, best of two: measured here, a start paid for garbage
 * collection over the bench's own heap, which holds the folded state. The row also says the save's time.
 */
async function startRow(history: Awaited<ReturnType<typeof historyServer>>, events: number): Promise<TableRow> {
  await history.fillTo(events);
  const state = history.state();
  const stores = await openSnapshotStores(history.nc);
  const saving = performance.now();
  const saved = await saveSnapshot(stores, state);
  const save = performance.now() - saving;
  let raw = Number.POSITIVE_INFINITY;
  let start = Number.POSITIVE_INFINITY;
  for (let round = 0; round < 2; round += 1) {
    const child = await startInChild(history.server.url, saved.sequence);
    raw = Math.min(raw, child.rawMs);
    start = Math.min(start, child.startMs);
    if (child.startedFrom !== saved.sequence) throw new Error("the start did not use the snapshot");
  }
  return {
    bench: `start from snapshot at ${events} events (${(saved.bytes / 2 ** 20).toFixed(1)} MiB gzipped)`,
    measured: `${s(start)} (${ratio(start / raw)} raw; save ${s(save)})`,
    baseline: `raw get+gunzip+parse ${s(raw)}`,
    goal: "< 1 s", met: start < 1000,
  };
}

/** Composition at 1,000 and 10,000 nodes x 5 modules (pure: no bus baseline, the 1k run is its scale). */
function composeRows(quick: boolean): TableRow[] {
  const small = measureCompose(quick ? 500 : 1000, false);
  const large = measureCompose(quick ? 5000 : 10_000, false);
  const growth = large.composeMs / small.composeMs;
  return [
    { bench: `compose ${large.nodes} nodes x 5 modules (median of 3)`, measured: `${ms(large.composeMs)} (cpu ${ms(large.cpuMs)})`, baseline: "-", goal: "< 1 s", met: large.composeMs < 1000 },
    { bench: `compose time(${large.nodes}) / time(${small.nodes})`, measured: `${ratio(growth)} (cpu ${ratio(large.cpuMs / small.cpuMs)})`, baseline: `${small.nodes}: ${ms(small.composeMs)}`, goal: "≤ 10", met: growth <= 10 },
  ];
}

/** Push to every node, first and again, against a raw pipelined publish of the same payloads. */
async function pushRows(quick: boolean): Promise<TableRow[]> {
  const row = await measurePush(quick ? 300 : 1000);
  return [
    { bench: `push first, ${row.nodes} nodes / raw pipelined publish`, measured: `${ratio(row.ratio)} (${row.pushMs} ms; cpu ${row.cpu.push} ms)`, baseline: `raw ${row.rawMs} ms (cpu ${row.cpu.raw} ms)`, goal: "≥ 0.9x", met: row.ratio >= 0.9 },
    { bench: `push again, ${row.nodes} nodes / raw pipelined publish`, measured: `${ratio(row.againRatio)} (${row.againMs} ms; cpu ${row.cpu.again} ms)`, baseline: `raw ${row.rawMs} ms (cpu ${row.cpu.raw} ms)`, goal: "≥ 0.9x", met: row.againRatio >= 0.9 },
  ];
}

/** A push at `users` nodes until the hub's bus has reloaded the composed user list. */
async function brokerRow(users: number): Promise<TableRow> {
  const row = await measureBroker(users);
  return {
    bench: `push at ${users} nodes to the user list reloaded on the bus`,
    measured: s(row.toReloadedMs),
    baseline: `reload ${row.reloadMs ?? "?"} ms, list ${(row.listBytes / 2 ** 20).toFixed(1)} MiB`,
    goal: "< 5 s", met: row.toReloadedMs < 5000 && row.newUserConnects,
  };
}

/**
 * The fleet rows at one size (fleet.ts): the reload with N connected (goal < 2 s up to 1,000, < 10 s
 * beyond, within 1.2x of raw, none of the others dropped), with its parts and raw's reload of the
 * mesh's own list beside it; the storm (all back < 30 s, none lost); and the first connect of the N
 * (no goal: the cost of the credential kind, beside raw).
 */
function fleetRows(row: FleetRow): TableRow[] {
  const { size, mesh } = row;
  const limit = size <= 1000 ? 2000 : 10_000;
  const parts = (side: FleetSide) => Object.entries(side.parts).map(([name, value]) => `${name} ${s(value)}`).join(", ");
  if ("failed" in row.raw) {
    // The mesh side's figures stand; without their baseline no ratio goal can be judged.
    const failed = `raw side failed: ${row.raw.failed}`;
    return [
      { bench: `reload with ${size} connected (${mesh.kind}), one user rotated`, measured: `${s(mesh.toLiveMs)} (${parts(mesh)}; reload ${s(mesh.reloadMs)}; others dropped ${mesh.droppedByReload})`, baseline: failed, goal: `< ${limit / 1000} s, ≤ 1.2x raw, 0 dropped`, met: false },
      { bench: `reconnect storm, ${size} connections (${mesh.kind})`, measured: mesh.stormMs === null ? `not all back (${mesh.stormLost} lost)` : `${s(mesh.stormMs)}, lost ${mesh.stormLost}`, baseline: failed, goal: "< 30 s, none lost", met: mesh.stormMs !== null && mesh.stormMs < 30_000 && mesh.stormLost === 0 },
    ];
  }
  const raw = row.raw;
  const x = mesh.toLiveMs / raw.toLiveMs;
  const same = raw.withMeshList;
  const storm = (side: FleetSide) => side.stormFailed !== undefined
    ? `failed: ${side.stormFailed}`
    : side.stormMs === null
    ? `not all back: ${side.stormLost} not back (${side.stormClosed} given up), auth/TLS errors logged ${side.stormAuthFailures}, ${side.stormAttempts} dials`
    : `${s(side.stormMs)}, lost ${side.stormLost}, auth/TLS errors logged ${side.stormAuthFailures}, ${side.stormAttempts} dials, peak ${side.stormPeakPerSecond}/s`;
  return [
    {
      bench: `reload with ${size} connected (${mesh.kind}), one user rotated: compose+install until its new key is admitted (medians of ${mesh.toLiveRunsMs.length} rotations)`,
      measured: `${s(mesh.toLiveMs)}, ${ratio(x)} raw (${parts(mesh)}; SIGHUP to config_load_time ${s(mesh.reloadMs)}; others dropped ${mesh.droppedByReload}; old key refused: ${mesh.oldKeyRefused ? "yes" : "NO"})`,
      baseline: `hand-written list + SIGHUP ${s(raw.toLiveMs)} (${parts(raw)}; dropped ${raw.droppedByReload})` +
        (same ? `; the mesh's own list by hand ${s(same.toLiveMs)} (reload ${s(same.reloadMs)}): mesh ${ratio(mesh.toLiveMs / same.toLiveMs)} of it` : ""),
      goal: `< ${limit / 1000} s, ≤ 1.2x raw, 0 dropped`,
      met: mesh.toLiveMs < limit && x <= 1.2 && mesh.droppedByReload === 0 && mesh.oldKeyRefused,
    },
    {
      bench: `reconnect storm, ${size} connections (${mesh.kind}, in ${row.workers} client processes), kill -9 and restart: all back`,
      measured: storm(mesh), baseline: `raw ${storm(raw)}`,
      goal: "< 30 s, none lost", met: mesh.stormMs !== null && mesh.stormMs < 30_000 && mesh.stormLost === 0,
    },
    {
      bench: `first connect of ${size} (${mesh.kind}, ${64} at a time in ${row.workers} client processes; connectToBus: pinned TLS, the certificate probed once per process)`,
      measured: `${s(mesh.connectMs)} (${mesh.connectRetries} dials retried)`, baseline: `raw nats.js TLS ${s(raw.connectMs)} (${raw.connectRetries} retried)`, goal: "-", met: null,
    },
  ];
}

/**
 * Issue 14, on a three-server cluster in one run: the command p50 against raw publish+ack p50 to a
 * stream of three replicas (failover has rows of its own: failoverRows).
 */
async function clusterRows(quick: boolean): Promise<TableRow[]> {
  const row = await measureCluster(quick ? 200 : 1000);
  return [
    {
      bench: `command p50 on a 3-server cluster / raw R3 publish+ack p50, ${row.count} round trips`,
      measured: `${ratio(row.commandP50 / row.rawP50)} (${ms(row.commandP50)})`,
      baseline: `raw R3 ${ms(row.rawP50)}`, goal: "-", met: null,
    },
  ];
}

/**
 * Issue 26 (R77), on fresh three-server clusters with an active controller in a process of its own
 * and a standby: kill -9 of the records' leader's server and of the active controller, each → the
 * first acknowledged command, median of `rounds`, every sample beside it; the baseline is the same
 * rounds' own reference (the records' new leader as the server reports it; the standby's takeover).
 */
async function failoverRows(rounds: number, log: (line: string) => void): Promise<TableRow[]> {
  const result = await measureFailover(rounds, 20, log);
  const samples = (kind: FailoverKind) => result.samples.filter((x) => x.kind === kind).map((x) => s(x.ms)).join(", ");
  const row = (kind: FailoverKind, what: string, baseline: string): TableRow => ({
    bench: `failover: ${what} killed (SIGKILL) → first command acknowledged, median of ${result.rounds}`,
    measured: `${s(result.medians[kind])} (${samples(kind)})`,
    baseline, goal: "≤ 3 s", met: result.medians[kind] <= 3000,
  });
  return [
    row("records-leader", "the records' leader's server", `the server's own election of a new leader ${s(result.references["records-leader"])} (median)`),
    row("controller", `the active controller (lease ${s(result.leaseMs)})`, `the standby took the lease at ${s(result.references.controller)} (median)`),
  ];
}

/**
 * Issue 29, the `mesh` command line (cli.ts), each call a fresh process of the built launcher:
 * `mesh --version` against `node -e 0`, `mesh nodes` on a one-node mesh against a bare nats.js
 * client's one request with the same credential (ratios of CPU time, same run, alternating), and
 * `mesh up` of a new mesh to its summary.
 */
async function cliRows(quick: boolean, log: (line: string) => void): Promise<TableRow[]> {
  const cli = await measureCli(quick ? 5 : 10, log);
  const side = (name: string, x: Side) => `${name} ${ms(x.cpuMs / x.runs)} cpu, ${ms(x.wallMs)} wall`;
  const versionX = cli.version.mesh.cpuMs / cli.version.node.cpuMs;
  const nodesX = cli.nodes.mesh.cpuMs / cli.nodes.bare.cpuMs;
  return [
    {
      bench: `\`mesh --version\` / \`node -e 0\`, CPU per run (${cli.version.mesh.runs} runs each, alternating)`,
      measured: `${ratio(versionX)} (${side("mesh", cli.version.mesh)}; wall ${ratio(cli.version.mesh.wallMs / cli.version.node.wallMs)})`,
      baseline: side("node -e 0", cli.version.node), goal: "≤ 1.5x", met: versionX <= 1.5,
    },
    {
      bench: `\`mesh nodes\` (one-node mesh) / a bare nats.js client's one request, same credential, CPU per run (${cli.nodes.mesh.runs} runs each)`,
      measured: `${ratio(nodesX)} (${side("mesh", cli.nodes.mesh)}; wall ${ratio(cli.nodes.mesh.wallMs / cli.nodes.bare.wallMs)})`,
      baseline: side("bare client", cli.nodes.bare), goal: "≤ 1.5x", met: nodesX <= 1.5,
    },
    {
      bench: "`mesh up` of a new mesh to its summary (genesis, bus, controller, host, example mesh, push)",
      measured: `${s(cli.up.wallMs)} (its own process ${ms(cli.up.cpuMs)} cpu)`,
      baseline: "-", goal: "< 5 s (idle machine)", met: cli.up.wallMs < 5000,
    },
  ];
}

/**
 * Issue 30, `mesh ui` at `nodes` nodes (ui.ts): the page's first view in Chromium, the server just
 * started (its first read included), against the client's raw reads of what the overview shows.
 */
async function uiRow(nodes: number, log: (line: string) => void): Promise<TableRow> {
  const r = await measureUi(nodes, log);
  return {
    bench: `\`mesh ui\` first view at ${r.nodes} nodes, server just started (Chromium: navigation to the first page of nodes drawn)`,
    measured: `${s(r.coldMs)} (${ratio(r.coldMs / r.rawMs)} raw; the whole overview with reports ${s(r.coldWholeMs)}, ${ratio(r.coldWholeMs / r.rawMs)} raw; `
      + `opened again ${ms(r.warmMs)}; /api/overview ${ms(r.firstByteMs)}, ${Math.round(r.overviewBytes / 1024)} KiB)`,
    baseline: `the client's reads of what the overview shows ${s(r.rawMs)} (nodes alone ${s(r.nodesQueryMs)})`,
    goal: "< 1 s", met: r.coldMs < 1000,
  };
}

/** Prints rows as a markdown table (so docs/performance.md can take it as printed). */
export function printTable(title: string, rows: readonly TableRow[]): void {
  console.log(`\n${title}\n`);
  console.log("| bench | measured | raw baseline (same run) | goal | met? |");
  console.log("| --- | --- | --- | --- | --- |");
  for (const r of rows) console.log(`| ${r.bench} | ${r.measured} | ${r.baseline} | ${r.goal} | ${r.met === null ? "-" : r.met ? "yes" : "NO"} |`);
}

export async function run(args: string[]): Promise<void> {
  const quick = args.includes("--quick");
  const known = ["command", "fenced", "replay", "start", "compose", "push", "broker", "fleet", "memory", "cluster", "cli", "failover", "ui"];
  const only = option(args, "--only")?.split(",");
  const unknown = only?.filter((name) => !known.includes(name)) ?? [];
  if (unknown.length > 0) throw new Error(`--only takes ${known.join(",")}; not ${unknown.join(",")}`);
  const wanted = (name: string) => (only ? only.includes(name) : name === "broker" ? !quick : name === "ui" ? existsSync(CHROMIUM) : true);
  const log = (line: string) => console.error(line);
  const rows: TableRow[] = [];
  // A row that throws (a bus busy after a reload, say) is printed as failed; the others still are.
  const attempt = async (bench: string, measure: () => Promise<TableRow | TableRow[]> | TableRow[]) => {
    log(`${bench} ...`);
    try {
      const measured = await measure();
      rows.push(...(Array.isArray(measured) ? measured : [measured]));
    } catch (error) {
      rows.push({ bench, measured: `failed: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`, baseline: "-", goal: "-", met: false });
    }
  };
  const started = performance.now();

  if (wanted("command")) await attempt("command", () => commandRow(quick));
  if (wanted("fenced")) await attempt("fenced", () => fencedRow(quick));
  if (wanted("replay") || wanted("start")) {
    const replayEvents = Number(option(args, "--replay-events") ?? (quick ? 20_000 : 100_000));
    const startEvents = Number(option(args, "--start-events") ?? (quick ? 100_000 : 1_000_000));
    const history = await historyServer(Math.max(replayEvents, startEvents) + 10);
    try {
      if (wanted("replay")) await attempt(`replay at ${replayEvents} events`, () => replayRow(history, replayEvents));
      if (wanted("start")) await attempt(`start at ${startEvents} events`, () => startRow(history, startEvents));
    } finally {
      await history.close();
    }
  }
  if (wanted("compose")) await attempt("compose", () => composeRows(quick));
  if (wanted("push")) await attempt("push", () => pushRows(quick));
  if (wanted("broker")) await attempt("push at 10000 nodes to the reloaded list", () => brokerRow(10_000));
  if (wanted("fleet")) {
    const sizes = (option(args, "--fleet") ?? (quick ? "200" : "1000")).split(",").map(Number);
    for (const size of sizes) {
      if (!Number.isInteger(size) || size < 2) throw new Error(`--fleet takes sizes like 1000,10000; not ${size}`);
      await attempt(`fleet at ${size} connections`, async () => fleetRows(await measureFleet(size, log)));
    }
  }
  if (wanted("memory")) {
    const nodes = Number(option(args, "--memory-nodes") ?? (quick ? 1000 : 10_000));
    await attempt(`controller memory at ${nodes} nodes`, async () => {
      const m = await measureMemory(nodes, log);
      return {
        bench: `controller RSS at ${m.nodes} nodes (fresh child process): after start / after a push to every node`,
        measured: `${m.startRssMiB} / ${m.pushRssMiB} MiB (heap ${m.startHeapMiB} / ${m.pushHeapMiB} MiB; start ${s(m.startMs)}, push ${s(m.pushMs)})`,
        baseline: `bare process (node+tsx+client, one connection) ${m.bareRssMiB} MiB; records ${m.recordsMiB} MiB`,
        goal: "-", met: null,
      };
    });
  }
  if (wanted("cluster")) await attempt("the mesh on a 3-server cluster", () => clusterRows(quick));
  if (wanted("cli")) await attempt("the mesh command line", () => cliRows(quick, log));
  if (wanted("failover")) await attempt("failover on a 3-server cluster", () => failoverRows(quick ? 1 : 3, log));

  if (wanted("ui")) await attempt("mesh ui", () => uiRow(Number(option(args, "--ui-nodes") ?? (quick ? 1000 : 10_000)), log));

  if (args.includes("--json")) console.log(JSON.stringify(rows, null, 2));
  else printTable(`issue 13 performance table${quick ? " (--quick sizes)" : ""}: ${Math.round((performance.now() - started) / 1000)} s`, rows);
  if (rows.some((r) => r.met === false)) process.exitCode = 1;
}
