/**
 * A whole mesh in this process for one describe block, as `mesh up` makes it in a temporary
 * folder: the bus a child process, the controller and the local node's host agent in this process
 * (inProcessLauncher), the operator connected. One fixture for every bus test that needs a mesh.
 */
import { before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, nkeyAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import { up, operatorConnection, operatorUser, busReloadOptions, type UpResult } from "../../src/up/up.ts";
import { inProcessLauncher, type InProcessLauncher } from "../../src/up/daemon.ts";
import { stopAll } from "../../src/up/processes.ts";
import { freePort } from "../../installer/serverConfig.ts";
import { connectToBus, BusConnectError, type BusCredential } from "../../src/bus/connect.ts";
import { initHostKeys, saveNodeCredential, startHost, readCredentialFile, NODE_CREDENTIAL_FILE, type Host } from "../../src/host/index.ts";
import { parseBusAddress } from "../../src/projections/index.ts";
import { askAs } from "./client.ts";
import { runMesh, type CliRun } from "./cli.ts";
import { EXIT_OK } from "../../src/cli/context.ts";

/** The local node's name on every such mesh. */
export const LOCAL_NODE = "alpha";

export type LocalMeshOptions = {
  /** The temporary folder's name prefix, e.g. `mesh-lifecycle-`. */
  prefix: string;
  /** Manifests `mesh up` registers (default: up's own, the example mesh). */
  manifests?: readonly string[];
  /** How long `mesh up` waits for the controller and its push, ms (default 30,000). */
  upTimeoutMs?: number;
  /** MESH_TIMEOUT_MS for `mesh(...)`, ms (default 20,000). */
  cliTimeoutMs?: number;
};

/** The handles of a local mesh; `root`, `dir`, `launcher`, `result` and `operator` throw before the before hook ran. */
export type LocalMesh = {
  /** The temporary folder; the mesh's own is `dir` (`<root>/.mesh`), other nodes' state folders go beside it. */
  readonly root: string;
  readonly dir: string;
  readonly launcher: InProcessLauncher;
  readonly result: UpResult;
  /** The operator's connection (its credential file is `result.paths.operatorCredential`). */
  readonly operator: NatsConnection;
  /** Every line any part of the mesh logged, in order (searched for passwords by some tests). */
  readonly logs: string[];
  readonly log: (line: string) => void;
  /** The host agents `runNode` started, stopped at the end (a test may pop and stop one itself). */
  readonly hosts: Host[];
  /** The keys each node run by `runNode` enrolled with (what `mesh host init` printed). */
  readonly enrolledKeys: Map<string, { publicKey: string; nkey: string }>;
  /** Asks the controller as the operator; fails the test when refused; the reply. */
  ask(verb: string, body?: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** Runs `mesh <argv>` in-process with the operator's credential file; its exit code and output. */
  mesh(...argv: string[]): Promise<CliRun>;
  /** `mesh push --wait --json`, failing the test unless it exits 0; the overlaps its report says it kept open (R73). */
  pushWait(): Promise<unknown>;
  /**
   * Enrols `node` with a host agent of its own running in this process; returns its state folder
   * (`<root>/<node>`). `installsList`: its agent can install the user list on the one bus, as a
   * broker holder's must.
   */
  runNode(node: string, options?: { installsList?: boolean }): Promise<string>;
};

/** A bus login refused for its credential (not a network or TLS failure). */
export function isAuthorizationRefusal(error: unknown): boolean {
  return error instanceof BusConnectError && /user or password|authorization/i.test(error.message);
}

/** Dials once with `credential`; true when the bus admits it, false when it refuses the login; throws otherwise. */
export async function admitted(credential: BusCredential): Promise<boolean> {
  try {
    await (await connectToBus(credential, { reconnect: false })).close();
    return true;
  } catch (error) {
    if (isAuthorizationRefusal(error)) return false;
    throw error;
  }
}

/**
 * Dials as a standard client with exactly a module's env: 127.0.0.1 at its address's port, the
 * address's host as the TLS name, its certificate file as the only CA (R71). One box:
 * `<node>.internal` resolves nowhere, so the name is checked as a resolver would make it.
 */
export async function dialWithEnv(env: Record<string, string>): Promise<NatsConnection> {
  const { host, port } = parseBusAddress(env.MESH_BROKER_ADDRESS!);
  return connect({
    servers: `127.0.0.1:${port}`, reconnect: false, timeout: 5_000, inboxPrefix: env.MESH_INBOX_PREFIX!,
    authenticator: nkeyAuthenticator(new TextEncoder().encode(env.MESH_NKEY_SEED!)),
    tls: { caFile: env.MESH_BROKER_CERTIFICATE_FILE!, servername: host } as object,
  });
}

/**
 * Registers, in the calling describe block, a before hook that brings a mesh up (node
 * {@link LOCAL_NODE}, on a free port, bus attached) and an after hook that stops the hosts run
 * here, the operator, the launcher and every process of the mesh, and removes the folder. A test
 * file's own before hooks declared after this call see the mesh up; after hooks it declared
 * before this call run before the mesh stops.
 */
export function localMesh(options: LocalMeshOptions): LocalMesh {
  const started: { root?: string; dir?: string; launcher?: InProcessLauncher; result?: UpResult; operator?: NatsConnection } = {};
  const logs: string[] = [];
  const log = (line: string) => { logs.push(line); };
  const hosts: Host[] = [];
  const enrolledKeys = new Map<string, { publicKey: string; nkey: string }>();
  const ready = <K extends keyof typeof started>(name: K): NonNullable<(typeof started)[K]> => {
    const value = started[name];
    if (value === undefined) throw new Error(`localMesh: ${name} is there once its before hook ran`);
    return value as NonNullable<(typeof started)[K]>;
  };
  const ask = async (verb: string, body: Record<string, unknown> = {}) => {
    const reply = await askAs(ready("operator"), operatorUser(ready("result").paths), verb, body, 30_000);
    assert.ok(reply.ok, `${verb} refused: ${JSON.stringify(reply)}`);
    return reply as Record<string, unknown>;
  };
  const mesh = (...argv: string[]): Promise<CliRun> =>
    runMesh(argv, { MESH_CREDENTIAL: ready("result").paths.operatorCredential, MESH_TIMEOUT_MS: String(options.cliTimeoutMs ?? 20_000) });
  const pushWait = async (): Promise<unknown> => {
    const pushed = await mesh("push", "--wait", "--json");
    assert.equal(pushed.code, EXIT_OK, `${pushed.out} ${pushed.err}`);
    return (JSON.parse(pushed.out) as { overlaps?: unknown }).overlaps;
  };
  const runNode = async (node: string, { installsList = false } = {}): Promise<string> => {
    const stateDir = join(ready("root"), node);
    const { publicKey, nkey } = initHostKeys(stateDir);
    enrolledKeys.set(node, { publicKey, nkey });
    saveNodeCredential(stateDir, await ask("node.enrol", { node, publicKey, nkey }));
    const credential = readCredentialFile(join(stateDir, NODE_CREDENTIAL_FILE), stateDir);
    const bus = installsList ? { bus: busReloadOptions(ready("result").paths) } : {};
    hosts.push(startHost({ stateDir, node, credential, log, ...bus, backoff: { initialMs: 100, maxMs: 500 } }));
    return stateDir;
  };

  before(async () => {
    started.root = mkdtempSync(join(tmpdir(), options.prefix));
    started.dir = join(started.root, ".mesh");
    started.launcher = inProcessLauncher(log);
    const port = await freePort();
    started.result = await up({
      dir: started.dir, log, launcher: started.launcher, brokerAddress: `tls://127.0.0.1:${port}`, node: LOCAL_NODE,
      detachBus: false, timeoutMs: options.upTimeoutMs ?? 30_000, ...(options.manifests ? { manifests: options.manifests } : {}),
    });
    started.operator = await operatorConnection(started.result.paths);
  });
  after(async () => {
    for (const host of hosts) await host.stop().catch(() => undefined);
    await started.operator?.close().catch(() => undefined);
    await started.launcher?.stop();
    if (started.dir) await stopAll(started.dir);
    if (started.root) rmSync(started.root, { recursive: true, force: true });
  });

  return {
    get root() { return ready("root"); },
    get dir() { return ready("dir"); },
    get launcher() { return ready("launcher"); },
    get result() { return ready("result"); },
    get operator() { return ready("operator"); },
    logs, log, hosts, enrolledKeys, ask, mesh, pushWait, runNode,
  };
}
