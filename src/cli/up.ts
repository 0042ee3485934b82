import { existsSync } from "node:fs";
import { seenMemory } from "./seenFile.ts";
import type { NatsConnection } from "@nats-io/transport-node";
import { EXIT_OK, EXIT_REFUSED, EXIT_USAGE, UsageError, connectWithCredentialFile, loadCredential, type CliContext } from "./context.ts";
import { CommandTransportError } from "../client/send.ts";
import { BusConnectError, credentialAddresses } from "../bus/connect.ts";
import { probeCertificate } from "../bus/pin.ts";
import type { CliVerb } from "./busVerb.ts";
import { UpError } from "../up/errors.ts";
import type { UpResult } from "../up/up.ts";
import { exitOf, shortfallsOf } from "./push.ts";
import { VERBS_VERSION } from "../contracts/verbs.ts";
import { DEFAULT_UP_ADDRESS } from "../up/plan.ts";
import { renderSummary, serversDown, serversDownLine, type BusServerSeen, type UpSummary } from "../up/summary.ts";
import { InstallerError } from "../../installer/errors.ts";
import type { MeshPaths } from "../../installer/genesis.ts";
import { ConfigError, meshInvocation } from "../config.ts";
import { printData } from "./output.ts";
import { WATCH_OPTION, watchChanges } from "./watch.ts";
import { registerContext } from "./contexts.ts";

/**
 * What these verbs run, loaded by the verb that runs it: `up` itself, the processes it starts, and
 * genesis. Every other verb of `mesh` starts without them (each module read at a start costs time
 * under tsx), and `mesh down` without the controller's and the bus's modules.
 */
const upModule = () => import("../up/up.ts");
const processesModule = () => import("../up/processes.ts");
const genesisModule = () => import("../../installer/genesis.ts");

/**
 * `mesh up`, `mesh down`, `mesh status`: the embedded default (src/up). `up` leaves the bus, the
 * controller and one host agent running in the background (pids in `<dir>/run`, logs in
 * `<dir>/logs`); `down` stops them; `status` says what runs and, when it can, prints the summary.
 */

const DIR_OPTION = { flags: "--dir <folder>", description: "the mesh folder (default .mesh)" };

function dirOf(options: Readonly<Record<string, unknown>>): string {
  return typeof options.dir === "string" ? options.dir : ".mesh";
}

const CLUSTER_OPTION = {
  flags: "--cluster <servers>",
  description: "at genesis: a bus of this many nats-servers on this machine (3), routed over TLS, every stream with as many replicas, two controllers (one active, the other standing by)",
};

/** `--cluster <n>` as a number of servers, or undefined when not given; UsageError naming it otherwise. */
function clusterOf(options: Readonly<Record<string, unknown>>): number | undefined {
  if (options.cluster === undefined) return undefined;
  const size = Number(options.cluster);
  // Every stream keeps a replica on each server, and JetStream keeps at most five (R62).
  if (!Number.isInteger(size) || size < 1 || size > 5) throw new UsageError(`--cluster ${String(options.cluster)}: give the number of servers, 3 (1 to 5: every stream keeps a replica on each, and JetStream keeps at most 5)`);
  return size;
}

/**
 * The exit code of a failed `mesh up` or `mesh genesis` (docs/cli.md's exit codes): 1 when the
 * controller answered and refused a step (an UpError carrying its refusal code: `records-behind`
 * after a restore, R43), 2 for everything else `up` expects: an installation or configuration
 * error, a controller that did not answer or exited.
 */
export function upExitCode(error: InstallerError | UpError | ConfigError | BusConnectError): number {
  return error instanceof UpError && error.code !== undefined ? EXIT_REFUSED : EXIT_USAGE;
}

/**
 * What a failed `mesh up` left running in `dir` (`processes`: name → pid, null when stopped), and
 * the command that stops it; null when nothing runs or `message` (the failure's own) says so
 * already. A failure after the bus started (a connection refused, a controller that exited) leaves
 * the processes up: `mesh status` and the logs say why, and `mesh down` stops them.
 */
export function leftRunningLine(dir: string, processes: Readonly<Record<string, number | null>>, message: string): string | null {
  const running = Object.keys(processes).filter((name) => processes[name] !== null);
  if (running.length === 0 || message.includes("mesh down")) return null;
  return `mesh up: still running here: ${running.map((name) => `${name} pid ${processes[name]}`).join(", ")}; \`mesh down --dir ${dir}\` stops them`;
}

/**
 * One line for the failures `up` expects (bad configuration, a refused step, the bus it started not
 * reached), exit upExitCode, and what it left running (leftRunningLine); with `--json` also one
 * object on stdout, as every verb prints its failures: `{ ok: false, v, error: { code, message },
 * processes }` (v: the verbs' contract version, as every object up prints), the code the
 * controller's refusal (`records-behind`), `config`, `setup` (installation), `connection`, or `up`
 * (a controller that did not answer or exited, a step up cannot take).
 */
async function failed(ctx: CliContext, error: unknown, dir: string): Promise<number> {
  const processes = await managedProcesses(dir);
  const message = (error instanceof Error ? error.message : String(error)).split("\n")[0]!;
  const left = leftRunningLine(dir, processes, message);
  if (error instanceof InstallerError || error instanceof UpError || error instanceof ConfigError || error instanceof BusConnectError) {
    ctx.err(`mesh: ${message}`);
    if (left !== null) ctx.err(left);
    if (ctx.globals.json) {
      const code = error instanceof UpError ? error.code ?? "up" : error instanceof ConfigError ? "config" : error instanceof BusConnectError ? "connection" : "setup";
      printData(ctx, { ok: false, v: VERBS_VERSION, error: { code, message }, processes: processList(processes) });
    }
    return upExitCode(error);
  }
  if (left !== null) ctx.err(left);
  throw error;
}

/** The folder `mesh up` uses when none is named, where the CLI also finds the operator's credential. */
const DEFAULT_DIR = ".mesh";

/**
 * What to do once `mesh up` ran (issue 29): each command as `mesh` is called here (`npx mesh` in a
 * clone, meshInvocation), with `--dir` and `operatorCredential` (the file in it) when `dir` is not .mesh.
 * Lines for stdout, the first a heading. Pure.
 */
export function nextSteps(mesh: string, dir: string, operatorCredential: string): string[] {
  const here = dir === DEFAULT_DIR;
  const inDir = here ? "" : ` --dir ${dir}`;
  const asOperator = here ? "" : ` --credential ${operatorCredential}`;
  const steps: Array<[string, string]> = [
    [`${mesh} status${inDir}`, "the summary again, asked of the controller"],
    [`${mesh} nodes${asOperator}`, "the nodes, their modules and what each applied"],
    [`${mesh} --help`, "every verb; README.md's \"A first hour\" runs a module of your own"],
    [`${mesh} down${inDir}`, `stops the mesh; its records stay, and \`${mesh} up${inDir}\` starts it again`],
  ];
  const width = Math.max(...steps.map(([command]) => command.length));
  return ["next:", ...steps.map(([command, why]) => `  ${command.padEnd(width)}  ${why}`)];
}

/**
 * What `mesh up` says once the mesh runs, and its exit code: the summary (`--json`: one object `{
 * ok: true, v, node, summary, push }`), then the push's exit code as `mesh push` decides it for the
 * same report (exitOf): 1 when the push left something undone (a node that did not apply, a
 * module left out, no user list on the bus, a server that missed it), each named on stderr with its
 * fix (shortfallsOf). The processes keep running either way: only the exit code and the words say it.
 */
export function printUp(ctx: Pick<CliContext, "out" | "err" | "globals">, result: UpResult, dir: string, mesh = "mesh"): number {
  if (ctx.globals.json) printData(ctx, { ok: true, v: VERBS_VERSION, node: result.node, summary: summaryJson(result.summary), push: result.push });
  else {
    for (const line of renderSummary(result.summary)) ctx.out(line);
    ctx.out("");
    ctx.out(`the operator's credential is ${result.paths.operatorCredential}`);
    for (const line of nextSteps(mesh, dir, result.paths.operatorCredential)) ctx.out(line);
  }
  const exit = exitOf(result.push);
  if (exit !== EXIT_OK && !ctx.globals.json) {
    ctx.err(`mesh up: the mesh keeps running (\`${mesh} down --dir ${dir}\` stops it), but its push did not apply everywhere:`);
    for (const line of shortfallsOf(result.push)) ctx.err(`  ${line}`);
    // A node that did not report is most often one whose host agent is not running (R32).
    if ((result.push.counts?.["timed-out"] ?? 0) > 0 || result.push.nodes.some((n) => n.outcome === "timed-out")) {
      ctx.err(`  a node that did not report: start its host agent on its machine (\`mesh host\`), then \`${mesh} push --wait\` sends it what is still behind`);
    }
  }
  return exit;
}

const upVerb: CliVerb = {
  path: ["up"],
  examples: [["a whole mesh on this machine, in .mesh", "mesh up"], ["a three-server cluster", "mesh up --cluster 3"]],
  globals: ["json"],
  summary: "bring a whole mesh up on this machine (genesis, bus, controller, host, the example mesh, push --wait); exit 1 when that push did not apply everywhere, as `mesh push` (a node refused, failed or not reporting: its host agent not running, say), naming what and the fix, the mesh left running; 2 when a step could not be taken",
  options: [
    DIR_OPTION,
    { flags: "--address <tls://host:port>", description: `the genesis address when the folder holds no mesh yet (default ${DEFAULT_UP_ADDRESS}, or a free port the OS picks when 4222 is taken; a taken --address fails)` },
    { flags: "--node <name>", description: "the local node's name (default: this machine's host name)" },
    CLUSTER_OPTION,
  ],
  async run(ctx, _args, options) {
    const dir = dirOf(options);
    const cluster = clusterOf(options);
    const { up, detachedLauncher } = await upModule();
    try {
      const result = await up({
        dir,
        log: (line) => { if (!ctx.globals.json) ctx.err(line); },
        launcher: detachedLauncher(ctx.io.env),
        ...(typeof options.address === "string" ? { brokerAddress: options.address, addressSource: "--address" } : {}),
        ...(typeof options.node === "string" ? { node: options.node } : {}),
        ...(cluster === undefined ? {} : { cluster }),
      });
      const code = printUp(ctx, result, dir, meshInvocation(ctx.io.env));
      const registered = registerContext(ctx.config.configDir, result.summary.mesh.genesisAddress, result.paths.operatorCredential);
      if (registered !== null && !ctx.globals.json) ctx.err(registered);
      return code;
    } catch (error) {
      return await failed(ctx, error, dir);
    }
  },
};

const downVerb: CliVerb = {
  path: ["down"],
  examples: [["stop what mesh up started; the records stay", "mesh down"]],
  globals: ["json"],
  summary: "stop what `mesh up` started (the records stay: `mesh up` resumes them)",
  options: [DIR_OPTION],
  async run(ctx, _args, options) {
    const [{ meshPaths }, { stopAll }] = await Promise.all([genesisModule(), processesModule()]);
    const dir = meshPaths(dirOf(options)).dir;
    const stopped = await stopAll(dir);
    if (ctx.globals.json) printData(ctx, { ok: true, stopped });
    else ctx.out(stopped.length === 0 ? `nothing of ${dir} was running` : `stopped ${stopped.join(", ")} of ${dir}`);
    return EXIT_OK;
  },
};

/**
 * The processes `mesh up` started from `dir` and their pids (null: stopped), or none when `mesh up`
 * never ran there (startedByUp: a marker `mesh down` keeps; the bus writes its own pid file however
 * it was started, a systemd unit included, so that one proves nothing). Processes started otherwise are not `mesh up`'s to report: status asks the controller
 * itself over the bus instead.
 */
async function managedProcesses(dir: string): Promise<Record<string, number | null>> {
  const { processesOf, runningPid, startedByUp } = await processesModule();
  if (!startedByUp(dir)) return {};
  return Object.fromEntries(processesOf(dir).map((name) => [name, runningPid(dir, name)]));
}

/**
 * `mesh up --json` and `mesh status --json` print the summary with its processes as a list of
 * objects (`[{ name, pid, running }]`), like every list the CLI prints, not as a map.
 */
export function summaryJson(summary: UpSummary): Omit<UpSummary, "processes"> & { processes: ProcessView[] } {
  return { ...summary, processes: processList(summary.processes) };
}

/** One process of the embedded default in `--json` output. */
export type ProcessView = { name: string; pid: number | null; running: boolean };

function processList(processes: Record<string, number | null>): ProcessView[] {
  return Object.keys(processes).map((name) => ({ name, pid: processes[name] ?? null, running: processes[name] !== null }));
}

/**
 * `mesh status`: exit 0 when the controller answered (with the summary) and no server of the bus is
 * down; 1 when a server of a cluster is down (`server-down`: its process stopped or its address
 * does not answer; the summary is still printed, the server named with its address, R62), when the folder `--dir`
 * names holds no mesh and no operator's credential (said, naming both files, never answered with
 * the mesh of the credential file instead), `mesh up`'s own mesh is stopped, its controller is not running beside a running
 * bus (its last log line says why), the bus did not admit the operator, or the controller did not
 * answer or refused (records-behind, R43), or there is no mesh in the folder and no credential
 * to ask one elsewhere (`no-mesh`); 2 when the folder's mesh has no operator credential to ask it with. `--json` has one shape in every case: `{ ok, v, dir,
 * genesisAddress, processes: [{ name, pid, running }], summary: {...} | null }` (v: the verbs'
 * contract version, as every reply from the controller), plus `error: { code, message }` when not
 * ok (`no-mesh`, `not-running`, `controller-not-running`, `connection`, `server-down` (with the
 * summary), the controller's refusal code, or the transport's code).
 */
/**
 * R62: the servers at `addresses` (`tls://host:port`) that do not answer a dial now, by address,
 * with the dial's error: each is asked for its certificate (probeCertificate), all at once, within
 * `timeoutMs` (at most 5 s).
 */
async function unansweredServers(addresses: readonly string[], timeoutMs: number): Promise<Map<string, string>> {
  const unanswered = new Map<string, string>();
  await Promise.all(addresses.map(async (address) => {
    try {
      const { hostname, port } = new URL(address);
      await probeCertificate(hostname, Number(port), { timeoutMs: Math.min(timeoutMs, 5_000) });
    } catch (error) {
      unanswered.set(address, error instanceof Error ? error.message.split("\n")[0]! : String(error));
    }
  }));
  return unanswered;
}

const statusVerb: CliVerb = {
  path: ["status"],
  examples: [["what runs, and the summary", "mesh status"], ["as JSON", "mesh status -o json"]],
  globals: ["credential", "json", "timeout"],
  summary: "ask the mesh's controller over the bus (the folder's operator credential, else --credential) and print its summary; the local processes `mesh up` started (exit 1 when nothing answers or a bus server is down)",
  options: [DIR_OPTION, WATCH_OPTION],
  async run(ctx, args, options) {
    if (options.watch === true) return watchStatus(ctx, args, options);
    const { hasMesh, meshPaths } = await genesisModule();
    const paths = meshPaths(dirOf(options));
    const scene: StatusScene = { ctx, paths, here: hasMesh(paths.dir), processes: await managedProcesses(paths.dir) };
    const credentialFile = existsSync(paths.operatorCredential) ? paths.operatorCredential : ctx.globals.credential;
    const local = await localStatus(scene, options, credentialFile);
    if (local !== undefined) return local;
    if (!existsSync(credentialFile)) {
      throw new UsageError(`no operator credential at ${credentialFile}: pass --credential <file> (MESH_CREDENTIAL) to ask the controller`);
    }
    return askStatus(scene, credentialFile);
  },
};

/** What `mesh status` looks at: the folder (`here`: it holds a mesh) and the local processes `mesh up` started. */
type StatusScene = { ctx: CliContext; paths: MeshPaths; here: boolean; processes: Record<string, number | null> };

/** The local processes as one line: `bus pid 12, controller stopped`. */
function runningLine(processes: Record<string, number | null>): string {
  return Object.keys(processes).map((n) => `${n} ${processes[n] === null ? "stopped" : `pid ${processes[n]}`}`).join(", ");
}

/** Not ok: the same shape under --json (summary null, the error's code), a line on stderr otherwise; exit 1. */
function statusNotOk({ ctx, paths, processes }: StatusScene, genesisAddress: string | null, code: string, message: string): number {
  if (ctx.globals.json) printData(ctx, { ok: false, v: VERBS_VERSION, error: { code, message }, dir: paths.dir, genesisAddress, processes: processList(processes), summary: null });
  else ctx.err(`mesh: ${message}`);
  return EXIT_REFUSED;
}

/**
 * The answers found without the bus: `mesh up`'s own mesh stopped (`mesh down`), or no mesh here
 * and nothing to ask one elsewhere; undefined when the controller is to be asked.
 */
async function localStatus(scene: StatusScene, options: Readonly<Record<string, unknown>>, credentialFile: string): Promise<number | undefined> {
  const { ctx, paths, here, processes } = scene;
  // `mesh up`'s own mesh, stopped (`mesh down`): nothing answers; `mesh up` resumes it here.
  // On a cluster: stopped when no server of the bus runs, or neither controller does (R61, R62).
  const { controllerExit, logFile, STANDBY_CONTROLLER } = await processesModule();
  const buses = Object.keys(processes).filter((n) => n === "bus" || n.startsWith("bus-"));
  const busStopped = buses.length > 0 && buses.every((n) => processes[n] === null);
  const controllerStopped = "controller" in processes && processes.controller === null && (processes[STANDBY_CONTROLLER] ?? null) === null;
  if (here && (busStopped || controllerStopped)) {
    const mesh = (await genesisModule()).readMeshFile(paths.dir);
    if (!ctx.globals.json) ctx.out(`mesh at ${mesh.genesisAddress}: ${runningLine(processes)}`);
    if (busStopped) return statusNotOk(scene, mesh.genesisAddress, "not-running", `the mesh in ${paths.dir} is stopped: \`mesh up --dir ${paths.dir}\` starts it`);
    // The bus runs: the controller alone stopped (it could not start, or it died); its log says why.
    const why = controllerExit(paths.dir) ?? `the controller is not running (its log: ${logFile(paths.dir, "controller")})`;
    return statusNotOk(scene, mesh.genesisAddress, "controller-not-running", `the bus of the mesh in ${paths.dir} runs but ${why.replace(/^the /, "its ")}; \`mesh up --dir ${paths.dir}\` starts it again`);
  }
  // A folder named on purpose is the mesh asked about: one that holds neither a mesh nor an
  // operator's credential to ask one is said, never swapped for the credential file's mesh.
  if (!here && typeof options.dir === "string" && !existsSync(paths.operatorCredential)) {
    const elsewhere = existsSync(ctx.globals.credential) ? `, or leave --dir out to ask the mesh of the credential file (${ctx.globals.credential})` : "";
    return statusNotOk(scene, null, "no-mesh", `no mesh in ${paths.dir}: it holds neither ${paths.meshFile} nor ${paths.operatorCredential}; \`mesh up --dir ${paths.dir}\` makes one there${elsewhere}`);
  }
  // No mesh here and nothing to ask one elsewhere: the same answer as for a folder named on purpose.
  if (!here && !existsSync(credentialFile)) {
    return statusNotOk(scene, null, "no-mesh", `no mesh in ${paths.dir} and no operator credential at ${credentialFile}: \`mesh up\` makes one here; to look at a mesh elsewhere pass --credential <file> (MESH_CREDENTIAL)`);
  }
  return undefined;
}

/**
 * The controller asked wherever it runs, over the bus, as the operator (R51): its summary printed,
 * and on a cluster every server that did not answer named (R62, exit 1); not reached or not
 * answering is said with the local processes.
 */
async function askStatus(scene: StatusScene, credentialFile: string): Promise<number> {
  const { ctx, paths, here, processes } = scene;
  const [{ busServers, readMeshFile }, { readSummary }] = await Promise.all([genesisModule(), upModule()]);
  const credential = loadCredential(credentialFile);
  const genesisAddress = here ? readMeshFile(paths.dir).genesisAddress : credential.address;
  const hereLine = Object.keys(processes).length ? `; here: ${runningLine(processes)}` : "";
  let nc: NatsConnection;
  try {
    nc = await connectWithCredentialFile(credentialFile, { name: "mesh-status", reconnect: false, timeoutMs: ctx.globals.timeoutMs });
  } catch (error) {
    if (!(error instanceof BusConnectError)) throw error;
    return statusNotOk(scene, genesisAddress, "connection", `cannot reach the bus at ${credential.address} as ${credential.user}: ${error.message.split("\n")[0]}${hereLine}`);
  }
  try {
    const summary = await readSummary(paths, nc, ctx.globals.timeoutMs, {
      asker: credential.user,
      processes,
      memory: seenMemory(credentialFile, ctx.err),
      ...(here ? {} : { mesh: { genesisAddress: credential.address, fingerprint: credential.fingerprint ?? "-" } }),
    });
    // R62: a cluster answers with a server down; the summary is printed and the server named (exit 1).
    const seen: BusServerSeen[] = here
      ? busServers(paths, readMeshFile(paths.dir)).map((s) => ({ name: s.name, address: s.address, process: s.process }))
      : credentialAddresses(credential).map((address) => ({ name: address, address }));
    const down = seen.length > 1 ? serversDown(seen, processes, await unansweredServers(seen.map((s) => s.address), ctx.globals.timeoutMs)) : [];
    const fix = here ? `\`mesh up --dir ${paths.dir}\` starts it again` : "start it again on its machine";
    const problem = down.length > 0 ? { code: "server-down", message: serversDownLine(down, fix) } : null;
    if (ctx.globals.json) {
      printData(ctx, { ok: problem === null, v: VERBS_VERSION, ...(problem ? { error: problem } : {}), dir: paths.dir, genesisAddress, processes: processList(processes), summary: summaryJson(summary) });
    } else {
      for (const line of renderSummary(summary)) ctx.out(line);
      if (problem) ctx.err(`mesh: ${problem.message}`);
    }
    return problem ? EXIT_REFUSED : EXIT_OK;
  } catch (error) {
    if (!(error instanceof CommandTransportError || error instanceof UpError)) throw error;
    const code = error instanceof CommandTransportError ? error.code : error.code ?? "not-running";
    // A refusal is an answer (records-behind, say): say it as the controller's, not as silence.
    const said = error instanceof UpError && error.code !== undefined
      ? error.message.split("\n")[0]!
      : `the controller did not answer at ${credential.address}: ${error.message.split("\n")[0]}`;
    return statusNotOk(scene, genesisAddress, code, `${said}${hereLine}`);
  } finally {
    await nc.close().catch(() => undefined);
  }
}

/**
 * `mesh status --watch`: the status drawn again at each change the bus carries (watch.ts), heard
 * with the credential status asks with (the folder's operator credential, else --credential).
 */
async function watchStatus(ctx: CliContext, args: readonly unknown[], options: Readonly<Record<string, unknown>>): Promise<number> {
  const { watch: _watch, ...once } = options;
  const { meshPaths } = await genesisModule();
  const paths = meshPaths(dirOf(options));
  const file = existsSync(paths.operatorCredential) ? paths.operatorCredential : ctx.globals.credential;
  const nc = await connectWithCredentialFile(file, { name: "mesh-status-watch", reconnect: false, timeoutMs: ctx.globals.timeoutMs });
  try {
    return await watchChanges(ctx, nc, () => statusVerb.run(ctx, args, once));
  } finally {
    await nc.close().catch(() => undefined);
  }
}

const genesisVerb: CliVerb = {
  path: ["genesis"],
  examples: [["a mesh for a real machine", "mesh genesis --dir /etc/mesh --address tls://mesh.example:4222 --systemd"]],
  summary: "create a new mesh in a folder: keys, bus certificate and configuration, first user list, credentials",
  options: [
    DIR_OPTION,
    { flags: "--address <tls://host:port>", description: "MESH_BROKER_ADDRESS: the broker's public endpoint (port 4222 when none is given)", required: true },
    { flags: "--name <names>", description: "more names for the bus certificate, comma separated (overlay names)" },
    { flags: "--operator <name>", description: "the first operator's name (default admin)" },
    { flags: "--node <name>", description: "the genesis node: enrolled at genesis and carried in the first user list; its enrol reply goes to <dir>/<name>.enrol.json" },
    { flags: "--node-state <dir>", description: "the genesis node's state folder, where `mesh host init` wrote node.pub (with --node)" },
    { flags: "--systemd", description: "leave the bus stopped and write systemd units: <dir>/mesh-bus.service, mesh-controller.service, and mesh-host.service with --node" },
    { flags: "--force", description: "replace the mesh in the folder (its records are lost)" },
    CLUSTER_OPTION,
  ],
  async run(ctx, _args, options) {
    const cluster = clusterOf(options);
    const node = typeof options.node === "string" ? options.node : undefined;
    const nodeState = typeof options.nodeState === "string" ? options.nodeState : undefined;
    if ((node === undefined) !== (nodeState === undefined)) {
      throw new UsageError(node === undefined ? "--node-state needs --node <name>" : "--node needs --node-state <dir> (where `mesh host init` wrote node.pub)");
    }
    const { genesis } = await genesisModule();
    try {
      const made = await genesis({
        dir: dirOf(options),
        brokerAddress: String(options.address),
        addressSource: "--address",
        log: (line) => ctx.err(line),
        force: options.force === true,
        systemd: options.systemd === true,
        ...(typeof options.name === "string" ? { extraNames: options.name.split(",").map((n) => n.trim()).filter(Boolean) } : {}),
        ...(typeof options.operator === "string" ? { operator: options.operator } : {}),
        ...(node !== undefined && nodeState !== undefined ? { node: { name: node, stateDir: nodeState } } : {}),
        ...(cluster === undefined || cluster <= 1 ? {} : { cluster }),
      });
      ctx.out(`mesh created in ${made.paths.dir}: controller settings in ${made.paths.controllerEnv}, operator credential in ${made.paths.operatorCredential}`);
      if (made.enrolReply) ctx.out(`genesis node ${node} enrolled: open its credential with \`mesh host credential --state ${nodeState} --from ${made.enrolReply}\``);
      for (const file of made.unitFiles ?? []) ctx.out(`systemd unit: ${file}`);
      const registered = registerContext(ctx.config.configDir, String(options.address), made.paths.operatorCredential);
      if (registered !== null) ctx.err(registered);
      return EXIT_OK;
    } catch (error) {
      return await failed(ctx, error, dirOf(options));
    }
  },
};

/** The verbs of the embedded default, registered in src/cli/verbs.ts. */
export const UP_VERBS: readonly CliVerb[] = [genesisVerb, upVerb, downVerb, statusVerb];
