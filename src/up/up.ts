import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { connectWithCredentialFile } from "../client/dial.ts";
import { pollUntil, PollTimeout } from "../bus/retry.ts";
import { packageFile, readBusCredential, writeFileDurable } from "../files/index.ts";
import { meshClient, PUSH_REPLY_MARGIN_MS, type Answer, type MeshClient, type SeenMemory } from "../client/client.ts";
import type { ReplyOf, RequestOf, Verb } from "../contracts/verbs.ts";
import { registrationOrder } from "../manifest/order.ts";
import type { Environment } from "../config.ts";
import {
  readOwned, saveNodeCredential, NODE_CREDENTIAL_FILE,
  type BusReloadOptions,
} from "../host/index.ts";
import { busServers, enrolReplyFile, hasMesh, meshPaths, readMeshFile, type MeshPaths } from "../../installer/genesis.ts";
import { findNatsServer, testServerConfig } from "../../installer/serverConfig.ts";
import { startBus, pidFile } from "../../installer/bus.ts";
import { readUserList } from "../../installer/carried.ts";
import { localHost } from "../../installer/genesis.ts";
import { InstallerError } from "../../installer/errors.ts";
import { controllerExit, runningPid, recordPid, spawnDaemon, processesOf, STANDBY_CONTROLLER, SUPERVISOR } from "./processes.ts";
import { appliedOf, nodesOf, principalsByUser, seatsOf, type NodeLastReport, type UpSummary } from "./summary.ts";
import { REPORTS_PAGE } from "../push/reports.ts";
import { planIssueAndAssign, planPlacement, planRegistrations, pushLines, type UpCommand } from "./plan.ts";
import { RECORDS_BEHIND, UpError, refusedStep, upOverRecordsBehind } from "./errors.ts";
import { DEFAULT_UP_ADDRESS } from "./plan.ts";

import { DEFAULT_UP_HOST, DEFAULT_UP_PORT, addressResolves, chooseUpAddress, genesisOrResume, localNodeName, type UpAddress } from "./upGenesis.ts";

// Steps 1-2 live in upGenesis.ts; their names stay exported here, where callers find them.
export { DEFAULT_UP_ADDRESS, DEFAULT_UP_HOST, DEFAULT_UP_PORT, addressResolves, chooseUpAddress, localNodeName, type UpAddress };

/**
 * `mesh up`: the embedded default, a whole mesh on this machine (DESIGN.md: installer, R13, R14).
 *
 * 1. check nats-server is installed (else say `apt-get install -y nats-server`);
 * 2. genesis in the folder when it holds no mesh yet, else resume it from its records;
 * 3. start the bus, the controller and one local host agent (detached, pids in `<dir>/run`, logs in
 *    `<dir>/logs`; or in this process, for tests), each only when it is not running already;
 * 4. as the first operator: enrol the local node, register the example mesh (examples/ and the
 *    controller's own module.json), issue every module, assign them all to the local node, place
 *    it on the overlay as the hub, push and wait until it applied (R32);
 * 5. read back the summary: nodes, seat holders, the users on the bus, what each node applied.
 * Every step is idempotent: `mesh up` again resumes the same mesh and changes nothing new.
 *
 * Local overlay: on one machine `<node>.internal` resolves nowhere. The local node is the hub and
 * the broker, and the broker's own node reaches it at the genesis address 127.0.0.1:<port> (R7):
 * its credential (minted at genesis, R56) and every module's on it (composed at each push, R10)
 * carry that address, in whatever order the modules were issued, assigned and placed.
 *
 * No hidden step (R56): genesis enrols the local node and carries its account in the first user
 * list (`mesh genesis --node`), exactly as on a real machine; the rest are the operator's verbs.
 */

/** The folder of the local host agent's state inside the mesh folder. */
export const HOST_DIR = "host";
/** The file naming the local node. */
export const LOCAL_NODE_FILE = "node.name";
/** Written once the example mesh is set up: a later `mesh up` only resumes and pushes. */
export const EXAMPLE_MESH_FILE = "example-mesh.json";




/** The example mesh's manifests and the controller's own module.json (shipped with the package). */
export const EXAMPLES_DIR = packageFile("examples");
export const CONTROLLER_MANIFEST = packageFile("module.json");

/** A running controller, as startController returns it. */
export type RunningPart = { stop(): Promise<void> };

/** How the controller and the host run: detached processes (the CLI) or in this process (tests). */
export type Launcher = {
  /** Starts the controller for the mesh in `paths` unless it runs; resolves once started. */
  controller(paths: MeshPaths): Promise<void>;
  /** Starts the local host agent for `node` unless it runs. */
  host(paths: MeshPaths, node: string): Promise<void>;
  /**
   * When the controller it started is no longer running: one line saying so with the last line of
   * its log (why it stopped); undefined while it runs. `up` asks it while it waits for the
   * controller's answer, so a controller that exited is reported at once. A launcher that cannot
   * tell leaves it out.
   */
  exited?(paths: MeshPaths): string | undefined;
  /**
   * Starts the supervisor unless it runs (R76: it starts again what stopped, src/up/supervisor.ts);
   * `up` calls it once the host runs. A launcher whose processes live and die with it leaves it out.
   */
  supervise?(paths: MeshPaths): Promise<void>;
};

export type UpOptions = {
  /** The mesh folder (default `.mesh`). */
  dir: string;
  /** Progress lines (never a password, R3). */
  log: (line: string) => void;
  launcher: Launcher;
  /**
   * The genesis address when there is no mesh yet; a taken port fails naming `addressSource`.
   * Default: chooseUpAddress (4222 when free, else a free port, said in a progress line).
   */
  brokerAddress?: string;
  /** What the person typed to give `brokerAddress`, named in its errors (default MESH_BROKER_ADDRESS; the CLI: "--address"). */
  addressSource?: string;
  /** The port tried first when `brokerAddress` is absent (default 4222; tests pass a taken one). */
  preferredPort?: number;
  /** The local node's name (default: this machine's host name, as a mesh name). */
  node?: string;
  /** Manifests to register (default examples/*.json and module.json). */
  manifests?: readonly string[];
  /** Milliseconds to wait for the controller to answer and for the push (default 60,000). */
  timeoutMs?: number;
  /** Where to look for nats-server (a PATH-like list; default the PATH). */
  searchPath?: string;
  /** The bus runs detached (default true); in-process tests pass false to own it. */
  detachBus?: boolean;
  /**
   * At genesis: a bus of this many servers on this machine (`mesh up --cluster 3`, issue 14), every
   * stream with as many replicas, and two controllers, one active (R60..R62). Ignored when the
   * folder holds a mesh already (it resumes as it was made).
   */
  cluster?: number;
};

export type UpResult = {
  paths: MeshPaths;
  node: string;
  summary: UpSummary;
  /** The push's report as the controller answered it. */
  push: ReplyOf<"push">;
};


/** The manifests `mesh up` registers: examples/*.json, then the controller's own module.json. */
export function defaultManifests(): string[] {
  const examples = existsSync(EXAMPLES_DIR) ? readdirSync(EXAMPLES_DIR).filter((f) => f.endsWith(".json")).sort().map((f) => join(EXAMPLES_DIR, f)) : [];
  return existsSync(CONTROLLER_MANIFEST) ? [...examples, CONTROLLER_MANIFEST] : examples;
}

/** The bus user of the operator's credential in `paths`: the principal `up` sends commands as (R51). */
export function operatorUser(paths: MeshPaths): string {
  return readBusCredential(paths.operatorCredential).user;
}

/**
 * The operator's connection to the mesh in `paths`, dialled at the bus's local address with the
 * credential file as every verb dials it (connectWithCredentialFile, R50): a rotated key pending
 * beside the file is dialled when the bus refuses the file's, and then replaces it; while one is
 * pending, a reload that drops this connection (up's own push installing it) is followed by
 * reconnects with either key. Throws what connectToBus throws.
 */
export async function operatorConnection(paths: MeshPaths, timeoutMs = 5_000): Promise<NatsConnection> {
  return connectWithCredentialFile(paths.operatorCredential, { name: "mesh-up", reconnect: true, timeoutMs });
}

/** An answer's accepted reply (typed by the verb's contract), or the UpError of refusedStep, carrying the refusal's code. */
function ok<V extends Verb>(verb: V, answer: Answer<V>): ReplyOf<V> {
  if (answer.ok === false) throw refusedStep(verb, answer.error);
  return answer as ReplyOf<V>;
}

export { UpError };

/**
 * Starts each server of the bus of the mesh in `paths` that is not running (one, or a cluster's,
 * busServers), checking its configuration first.
 */
export async function ensureBus(paths: MeshPaths, binary: string, detached: boolean, log: (line: string) => void): Promise<void> {
  const mesh = readMeshFile(paths.dir);
  const servers = busServers(paths, mesh);
  for (const server of servers) {
    if (runningPid(paths.dir, server.process) !== null) continue;
    testServerConfig(binary, server.configFile);
    log(`up: starting the bus${servers.length > 1 ? ` server ${server.name}` : ""} on ${server.address}`);
    const bus = await startBus({
      binary, configFile: server.configFile, logFile: server.logFile,
      host: localHost(mesh.listenHost), port: server.port, fingerprint: mesh.fingerprint, detached,
    });
    recordPid(paths.dir, server.process, bus.pid);
  }
}

/** True when the mesh in `paths` runs a standby controller beside the active one (a cluster, R61). */
export function hasStandby(paths: MeshPaths): boolean {
  return processesOf(paths.dir).includes(STANDBY_CONTROLLER);
}

/**
 * Milliseconds between asks while the controller starts: a controller not serving yet is told by
 * the bus at once (no responders), so asking often costs little and finds it serving sooner.
 */
const ANSWER_POLL_MS = 50;

/**
 * Asks until the controller answers (it may be starting, or catching up), up to `timeoutMs`.
 * Throws UpError (no code: nothing refused, exit 2) at once when `exited` says the controller is
 * no longer running (its last log line), or when it did not answer in time. Either way the bus
 * keeps running: what the controller said may need the bus to fix (a stream's limits, R47).
 */
async function whenControllerAnswers(nc: NatsConnection, asker: string, timeoutMs: number, paths: MeshPaths, exited?: () => string | undefined): Promise<void> {
  const leftRunning = `the bus still runs (\`mesh down --dir ${paths.dir}\` stops it)`;
  let gone: string | undefined;
  try {
    await pollUntil(async () => {
      gone = exited?.();
      if (gone !== undefined) return "exited";
      return meshClient(nc, asker).nodes({}, { timeoutMs: 2_000 });
    }, { everyMs: ANSWER_POLL_MS, timeoutMs, what: "the controller answers" });
  } catch (error) {
    if (!(error instanceof PollTimeout)) throw error;
    const last = error.cause instanceof Error ? error.cause.message : String(error.cause ?? "no answer");
    throw new UpError(`up: the controller did not answer within ${timeoutMs} ms (${last}): see its log; ${leftRunning}`);
  }
  if (gone !== undefined) throw new UpError(`up: ${gone}; ${leftRunning}`);
}

/**
 * Runs `mesh up` (see the module comment). Throws InstallerError or UpError with one line; a
 * ConfigError from the controller's configuration passes through as is.
 */
export async function up(options: UpOptions): Promise<UpResult> {
  const log = options.log;
  const timeoutMs = options.timeoutMs ?? 60_000;
  const paths = meshPaths(options.dir);
  const binary = findNatsServer(options.searchPath);
  const detached = options.detachBus ?? true;

  // 1-2. genesis, or resume. The local node is the genesis node (R56), by the public steps a real
  // machine takes: `mesh host init --state <dir>/host`, `mesh genesis --node <node> --node-state
  // <dir>/host`, `mesh host credential --state <dir>/host --from <dir>/<node>.enrol.json`.
  const hostDir = join(paths.dir, HOST_DIR);
  const nodeFile = join(hostDir, LOCAL_NODE_FILE);
  await genesisOrResume(options, { paths, hostDir, nodeFile, detached });
  const node = localNode(paths, hostDir, nodeFile, log);
  await ensureBus(paths, binary, detached, log);

  // 3. the controller and the local host agent (R56: enrolled at genesis, its account carried in
  // the first list), started together so that their starts overlap: the host dials the bus and
  // binds its consumer by itself, again after a short pause while the controller has not raised it
  // yet (src/host/agent.ts); it is bound by the time the push comes. Then the operator's view.
  await options.launcher.controller(paths);
  await options.launcher.host(paths, node);
  const nc = await operatorConnection(paths);
  try {
    log("up: waiting for the controller to answer");
    const asker = operatorUser(paths);
    const exited = options.launcher.exited === undefined ? undefined : () => options.launcher.exited!(paths);
    await whenControllerAnswers(nc, asker, timeoutMs, paths, exited);
    const client = meshClient(nc, asker, { timeoutMs });

    // 4. the local node in the records, then supervised (R76) once up is done, whatever it came to.
    await localNodeKnown(client, options, paths, node);
    try {
      const push = await exampleMeshPushed(client, nc, asker, options, paths, node, timeoutMs);
      // 5. the summary, the supervisor started first so that it shows running. On a cluster the
      // lease may have moved to the standby meanwhile (R61): it is waited for like a starting controller.
      await whenControllerAnswers(nc, asker, timeoutMs, paths, exited);
      await options.launcher.supervise?.(paths);
      const summary = await readSummary(paths, nc, timeoutMs);
      return { paths, node, summary, push };
    } finally {
      await options.launcher.supervise?.(paths);
    }
  } finally {
    await nc.close().catch(() => undefined);
  }
}

/**
 * Steps 1-2 continued: the local node's name (its file), and its credential opened from its enrol
 * reply when the host folder lacks it. Throws UpError naming what is gone and the fix.
 */
function localNode(paths: MeshPaths, hostDir: string, nodeFile: string, log: (line: string) => void): string {
  if (!existsSync(nodeFile)) {
    throw new UpError(`up: ${paths.dir} holds a mesh made without a genesis node (no ${nodeFile}): \`mesh up\` runs meshes it made; run this one's parts by hand (docs/real-machines.md)`);
  }
  const node = readFileSync(nodeFile, "utf8").trim();
  if (!existsSync(join(hostDir, NODE_CREDENTIAL_FILE))) {
    const reply = enrolReplyFile(paths.dir, node);
    if (!existsSync(reply)) {
      throw new UpError(`up: ${join(hostDir, NODE_CREDENTIAL_FILE)} and ${reply} are gone: write {"credential": {"address", "user", "nkey", "fingerprint"}} for node ${node} (no secret: its seed is ${join(hostDir, "node.seed")}) and run \`mesh host credential --state ${hostDir} --from <that file>\``);
    }
    log(`up: opening ${node}'s enrol reply (mesh host credential --from ${reply})`);
    saveNodeCredential(hostDir, JSON.parse(readFileSync(reply, "utf8")));
  }
  return node;
}

/**
 * Step 4: the local node known to the controller (R56), its host agent running already (up
 * started it with the controller). Over records behind the world (R43) the host still runs (it
 * tells the controller what it holds, and installs what the push after `mesh replay
 * --accept-restore` sends), it is supervised, and `up` stops with UpError saying what to do; a
 * mesh whose records lack the local node is refused (UpError).
 */
async function localNodeKnown(client: MeshClient, options: UpOptions, paths: MeshPaths, node: string): Promise<void> {
  const nodes = await client.nodes();
  if (!nodes.ok && nodes.error.code === RECORDS_BEHIND) {
    await options.launcher.supervise?.(paths);
    throw upOverRecordsBehind(paths.dir, nodes.error);
  }
  if (!nodesOf(ok("nodes", nodes)).some((n) => n.name === node)) {
    throw new UpError(`up: node ${node} is not enrolled in the mesh of ${paths.dir} (its genesis named another node?)`);
  }
}

/**
 * Steps 4 and 5's push: the example mesh (exampleMesh), then the push, waiting for every node to
 * apply (R32); its lines logged. Returns the push's report.
 */
async function exampleMeshPushed(client: MeshClient, nc: NatsConnection, asker: string, options: UpOptions, paths: MeshPaths, node: string, timeoutMs: number): Promise<ReplyOf<"push">> {
  await exampleMesh(client, options, paths, node);
  // A node whose agent is not running is waited for to the end: said, so the wait is not silence.
  options.log(`up: pushing, and waiting up to ${Math.round(timeoutMs / 1000)} s for every node to apply (a node whose host agent is not running is reported timed-out then)`);
  const push = await pushAndWait(nc, asker, timeoutMs);
  for (const line of pushLines(push)) options.log(line);
  return push;
}

/**
 * The example mesh, once: register, issue, assign, place (each step only when not done yet, so
 * an interrupted first `up` completes; afterwards what the operator changed is left alone).
 */
async function exampleMesh(client: MeshClient, options: UpOptions, paths: MeshPaths, node: string): Promise<void> {
  const exampleDone = join(paths.dir, EXAMPLE_MESH_FILE);
  if (existsSync(exampleDone)) return;
  // The controller handles commands one at a time in arrival order (src/serve/server.ts), and one
  // connection's requests arrive in the order sent: so each batch is sent at once, in order, its
  // answers awaited together (one round trip instead of one a command), the first refusal thrown.
  const run = async (commands: readonly UpCommand[]) => {
    for (const command of commands) options.log(command.line);
    const answers = await Promise.all(commands.map((command) => client.ask(command.verb, command.body as RequestOf<typeof command.verb>)));
    answers.forEach((answer, i) => ok(commands[i]!.verb, answer));
  };
  const registered = new Set(ok("modules", await client.modules()).modules.map((m) => m.name));
  const files = (options.manifests ?? defaultManifests()).map((file) => ({ file, manifest: JSON.parse(readFileSync(file, "utf8")) as { name: string } }));
  await run(planRegistrations(registered, registrationOrder(files)));
  const { modules } = ok("modules", await client.modules());
  await run(planIssueAndAssign(modules, node));
  await run(planPlacement(nodesOf(ok("nodes", await client.nodes())), node));
  writeFileDurable(exampleDone, `${JSON.stringify({ node, modules: modules.map((m) => m.name) }, null, 2)}
`, { mode: 0o644 });
}

/**
 * Where the local host agent writes the user list and how it has the bus reload it: the bus's
 * include file and configuration, its pid file and its monitoring endpoint on 127.0.0.1.
 */
export function busReloadOptions(paths: MeshPaths): BusReloadOptions | BusReloadOptions[] {
  const mesh = readMeshFile(paths.dir);
  if (!mesh.servers) {
    return {
      includeFile: paths.userList,
      configFile: paths.serverConfig,
      pid: pidFile(paths.dir, "bus"),
      monitorUrl: `http://127.0.0.1:${mesh.monitorPort}`,
    };
  }
  // R60: on a cluster every server gets the list, each its own copy, reloaded and reported.
  return busServers(paths, mesh).map((server) => ({
    server: server.name, includeFile: server.userList, configFile: server.configFile, pid: server.serverPidFile, monitorUrl: server.monitorUrl,
  }));
}

/**
 * `push {wait: true, ...body}` asked over `nc` (an operator's connection); resolves with the push's
 * report once every sent node applied its declaration or `timeoutMs` passed (R32). One request:
 * its reply survives the reload of the user list the push causes and the controller's reconnect
 * with its rotated key (R14), because the controller answers by an explicit grant on the
 * operator's inbox, which neither forgets (R33; allow_responses did). The waits that remain are
 * the controller's own (src/push/push.ts): after sending the broker a new list it awaits the
 * broker's report (the bus reloaded; its JetStream requests in flight would fail) and, for the
 * rotation, its confirmation of the new key; so nothing is left to wait for here. Throws UpError for a refused push, CommandTransportError when the controller does
 * not answer within `timeoutMs` plus PUSH_REPLY_MARGIN_MS (the CLI's `mesh push --wait` margin).
 */
export async function pushAndWait(nc: NatsConnection, asker: string, timeoutMs: number, body: RequestOf<"push"> = {}): Promise<ReplyOf<"push">> {
  const request = { ...body, wait: true, timeoutMs };
  return ok("push", await meshClient(nc, asker).push(request, { timeoutMs: timeoutMs + PUSH_REPLY_MARGIN_MS }));
}

/**
 * The summary of the mesh in `paths`, asked of its controller over `nc`. `seen` is for `mesh
 * status` off the `mesh up` machine: `asker` (the bus user the commands are sent as; default the
 * folder's operator), `mesh` (address and fingerprint, from the credential dialled, when the folder
 * holds no mesh.json) and `processes` (only those `mesh up` started from this folder; default every
 * one of PROCESSES), and `memory` (R68: the records sequence the credential's CLI has seen, sent
 * with each question). The bus's user list is read from the folder when it is there, else not named.
 */
export async function readSummary(
  paths: MeshPaths,
  nc: NatsConnection,
  timeoutMs = 10_000,
  seen: { asker?: string; mesh?: { genesisAddress: string; fingerprint: string }; processes?: Record<string, number | null>; memory?: SeenMemory } = {},
): Promise<UpSummary> {
  const asker = seen.asker ?? operatorUser(paths);
  const client = meshClient(nc, asker, { timeoutMs }, seen.memory);
  const mesh = seen.mesh ?? readMeshFile(paths.dir);
  const nodes = nodesOf(ok("nodes", await client.nodes()));
  const seats = seatsOf(ok("seats", await client.seats()));
  const principals = principalsByUser(ok("credentials", await client.credentials()));
  // The first server's list: on a cluster every server runs the same one (R60).
  const listFile = hasMesh(paths.dir) ? busServers(paths, readMeshFile(paths.dir))[0]!.userList : paths.userList;
  const listHere = existsSync(listFile);
  const listed = listHere ? readUserList(readFileSync(listFile, "utf8")) : [];
  const hostDir = join(paths.dir, HOST_DIR);
  const localNode = existsSync(join(hostDir, LOCAL_NODE_FILE)) ? readFileSync(join(hostDir, LOCAL_NODE_FILE), "utf8").trim() : null;
  const owned = readOwned(hostDir);
  // R55: every node's last report, read from the bus (pages of REPORTS_PAGE nodes, R59)
  const reports: NodeLastReport[] = [];
  for (let i = 0; i < nodes.length; i += REPORTS_PAGE) {
    const names = nodes.slice(i, i + REPORTS_PAGE).map((n) => n.name);
    reports.push(...ok("reports", await client.reports({ nodes: names })).reports);
  }
  const applied = appliedOf(nodes, reports, localNode && owned ? { node: localNode, digest: owned.digest, files: owned.files } : null);
  return {
    mesh: {
      genesisAddress: mesh.genesisAddress, fingerprint: mesh.fingerprint, dir: seen.mesh === undefined ? paths.dir : "",
      ...(seen.mesh === undefined && "servers" in mesh && mesh.servers ? { servers: busServers(paths, readMeshFile(paths.dir)).map((s) => ({ name: s.name, address: s.address })) } : {}),
    },
    nodes,
    seats,
    busUsers: listed.map((u) => ({
      user: u.user, principal: principals[u.user] ?? null,
      publishes: u.permissions.publish.allow.length, subscribes: u.permissions.subscribe.allow.length,
    })),
    ...(listHere ? {} : { busUsersElsewhere: true }),
    applied,
    processes: seen.processes ?? Object.fromEntries(processesOf(paths.dir).map((name) => [name, runningPid(paths.dir, name)])),
  };
}

/**
 * The launcher of the CLI: the controller, the host and the supervisor (R76) as detached processes
 * running src/up/daemonMain.ts (src/up/daemonProcess.ts), each started only when its recorded pid is not alive. `env` is passed to them.
 */
export function detachedLauncher(env: Environment): Launcher {
  return {
    async controller(paths) {
      if (runningPid(paths.dir, "controller") === null) spawnDaemon(paths.dir, "controller", env);
      // R61: on a cluster the standby waits for the active one's lease to lapse, then serves.
      if (hasStandby(paths) && runningPid(paths.dir, STANDBY_CONTROLLER) === null) spawnDaemon(paths.dir, "controller", env, STANDBY_CONTROLLER);
    },
    async host(paths) {
      if (runningPid(paths.dir, "host") === null) spawnDaemon(paths.dir, "host", env);
    },
    exited: (paths) => controllerExit(paths.dir),
    async supervise(paths) {
      if (runningPid(paths.dir, SUPERVISOR) === null) spawnDaemon(paths.dir, "supervisor", env);
    },
  };
}

export { pidFile, InstallerError };
