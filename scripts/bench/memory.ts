/**
 * `npm run bench -- memory [--nodes 10000] [--json]` (in the table: `--only memory`): the
 * controller's resident memory at N enrolled nodes (issue 13), measured in a fresh child process.
 *
 * The parent starts a nats-server and the test harness's controller fixture (genesis recorded),
 * starts a controller and enrols N nodes through `node.enrol` as an operator would (each with its
 * own key pair, so the records hold what a real enrolment writes, whatever the credential kind),
 * and stops it. A fresh child process (`node --import tsx`) then starts the controller from the
 * same configuration (startController: catch-up from the records, raise, serve) and prints its
 * `process.memoryUsage()` after the start and after one push to every node.
 *
 * Baseline, in the same run: the same child process that only dials the bus (Node, tsx and the
 * NATS client loaded, one connection), and the bytes of the records it folds (CATALOGUE).
 */
import { enrolRequest } from "../../test/support/enrol.ts";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { jetstreamManager } from "@nats-io/jetstream";
import { CATALOGUE_STREAM } from "../../src/names.ts";
import { startNatsServer } from "../../test/support/natsServer.ts";
import { controllerFixture } from "../../test/support/controller.ts";
import { parseControllerConfig } from "../../src/config.ts";
import { startController } from "../../src/bootstrap/main.ts";
import { memoryLog } from "../../src/bootstrap/log.ts";
import { connectToBus } from "../../src/bus/connect.ts";
import { option } from "./args.ts";

/** Megabytes (2^20) of a byte count, one decimal. */
const mib = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10;

export type MemoryRow = {
  nodes: number;
  /** RSS (MiB) of the controller's process after its start, and after one push to every node. */
  startRssMiB: number; pushRssMiB: number;
  /** V8 heap in use (MiB) at the same two moments. */
  startHeapMiB: number; pushHeapMiB: number;
  startMs: number; pushMs: number;
  /** The baseline process (Node, tsx, the client, one connection) and the records' bytes. */
  bareRssMiB: number; recordsMiB: number;
};

type ChildReport = { startRss: number; startHeap: number; pushRss?: number; pushHeap?: number; startMs?: number; pushMs?: number };

/** Runs this file as a fresh child (`--memory-child <mode>`) with `env`; returns what it printed. */
function child(mode: "controller" | "bare", env: Record<string, string>): Promise<ChildReport> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url), "--memory-child", mode], {
      env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    proc.stdout.on("data", (chunk: Buffer) => { out += chunk.toString("utf8"); });
    proc.on("error", reject);
    proc.on("exit", (code) => {
      const line = out.trim().split("\n").at(-1) ?? "";
      if (code !== 0) reject(new Error(`the ${mode} child exited with ${code}: ${line}`));
      else resolve(JSON.parse(line) as ChildReport);
    });
  });
}

/** The child's side: start (or only dial), push, print memory as one JSON line. */
async function childMain(mode: string): Promise<void> {
  const env = process.env as Record<string, string>;
  const config = parseControllerConfig(env);
  if (mode === "bare") {
    const nc = await connectToBus(config.credential, { name: "bench-bare", timeoutMs: 60_000 });
    await nc.flush();
    const used = process.memoryUsage();
    await nc.close();
    console.log(JSON.stringify({ startRss: used.rss, startHeap: used.heapUsed }));
    return;
  }
  let t = performance.now();
  const controller = await startController(config, { log: memoryLog(), connectTimeoutMs: 60_000 });
  const startMs = performance.now() - t;
  const started = process.memoryUsage();
  t = performance.now();
  const report = await controller.push();
  const pushMs = performance.now() - t;
  const pushed = process.memoryUsage();
  const sent = report.nodes.filter((n) => n.outcome === "sent").length;
  await controller.stop();
  if (sent === 0) throw new Error("the push sent no declaration");
  console.log(JSON.stringify({ startRss: started.rss, startHeap: started.heapUsed, pushRss: pushed.rss, pushHeap: pushed.heapUsed, startMs, pushMs }));
}

/** One measurement at `nodes` enrolled nodes (see the module comment). */
export async function measureMemory(nodes: number, log: (line: string) => void = (line) => console.error(line)): Promise<MemoryRow> {
  const server = await startNatsServer({ config: "max_payload: 1048576" });
  const fixture = await controllerFixture(server);
  try {
    const setup = await fixture.start();
    let t = performance.now();
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < nodes; i = next++) await fixture.send("node.enrol", enrolRequest(`n${i}`));
    };
    await Promise.all(Array.from({ length: 16 }, worker));
    log(`  memory: ${nodes} nodes enrolled in ${Math.round(performance.now() - t)} ms`);
    await setup.stop();
    const env = fixture.env as Record<string, string>;
    t = performance.now();
    const measured = await child("controller", env);
    log(`  memory: the child controller ran in ${Math.round(performance.now() - t)} ms`);
    const bare = await child("bare", env);
    const records = (await (await jetstreamManager(fixture.operator)).streams.info(CATALOGUE_STREAM)).state.bytes;
    return {
      nodes,
      startRssMiB: mib(measured.startRss), pushRssMiB: mib(measured.pushRss ?? 0),
      startHeapMiB: mib(measured.startHeap), pushHeapMiB: mib(measured.pushHeap ?? 0),
      startMs: Math.round(measured.startMs ?? 0), pushMs: Math.round(measured.pushMs ?? 0),
      bareRssMiB: mib(bare.startRss), recordsMiB: mib(records),
    };
  } finally {
    await fixture.close();
    await server.stop();
  }
}

/** `--nodes 10000` (default); prints the row as JSON. */
export async function run(args: string[]): Promise<void> {
  const nodes = Number(option(args, "--nodes") ?? 10_000);
  if (!Number.isInteger(nodes) || nodes < 1) throw new Error("--nodes takes a positive whole number");
  console.log(JSON.stringify(await measureMemory(nodes), null, 2));
}

const childAt = process.argv.indexOf("--memory-child");
if (childAt >= 0) {
  await childMain(process.argv[childAt + 1] ?? "controller").catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  });
  process.exit(0);
}
