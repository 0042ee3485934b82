import { spawnSync } from "node:child_process";
import { createServer } from "node:net";
import { InstallerError } from "./errors.ts";
import { BUS_LOG_SIZE_LIMIT } from "../src/host/busLog.ts";

/**
 * The bus's nats-server configuration as the installer writes it: listen address, TLS with the
 * mesh's own certificate (R34), a JetStream store under the mesh folder, the user list as an
 * include file (R13: the installer carries the first one, the broker's host agent rewrites it on
 * every push and reloads the bus), monitoring on localhost only, its own log file rotated at a size
 * (R70), and limits.
 */

/** File names inside the mesh folder. */
export const SERVER_CONFIG_FILE = "bus.conf";
export const USER_LIST_FILE = "users.conf";
export const STORE_DIR = "store";

/** Settings of renderServerConfig. Paths are absolute. */
export type ServerConfigOptions = {
  /** Interface the bus listens on: 0.0.0.0 on a real machine, 127.0.0.1 for the embedded default. */
  listenHost: string;
  /** Client port (the genesis address's port, R8). */
  port: number;
  /** Monitoring port on 127.0.0.1; 0 leaves monitoring off. */
  monitorPort: number;
  certFile: string;
  keyFile: string;
  storeDir: string;
  /** File name of the user list, relative to the configuration file (nats-server resolves includes so). */
  userListFile: string;
  /**
   * R70: the file nats-server logs to (busLogFile), rotated at `logSizeLimit`; the agent on the
   * bus's machine reads it back from the configuration and prunes the rotated files (src/host/busLog.ts).
   */
  logFile: string;
  /** Bytes after which the log is rotated (default BUS_LOG_SIZE_LIMIT). */
  logSizeLimit?: number;
  /** Where nats-server writes its pid (the broker's host agent signals it to reload). */
  pidFile?: string;
  /** Largest message in bytes (default 1 MiB, the NATS default; snapshots are chunked below it). */
  maxPayload?: number;
  /** JetStream file store limit in bytes (default 10 GiB). */
  maxFileStore?: number;
  /** JetStream memory store limit in bytes (default 256 MiB). */
  maxMemoryStore?: number;
  /** The server's name, unique in a cluster (default `mesh-bus`). */
  serverName?: string;
  /** This server's place in a cluster (issue 14, R60..R62); absent on a single server. */
  cluster?: ClusterOptions;
};

/**
 * A server's routes in a cluster: it listens for routes on `listenHost:port` and dials the other
 * servers' route addresses, TLS both ways with the mesh's own certificate (the same as on the client
 * port): each server presents it and verifies the other's against it (`ca_file`, verify is always
 * on for routes), so only holders of the mesh's key join the cluster.
 */
export type ClusterOptions = {
  /** The cluster's name (one per mesh). */
  name: string;
  /** Interface and port this server listens on for routes. */
  listenHost: string;
  port: number;
  /** The other servers' route endpoints, `host:port` (this server's own is ignored by nats-server anyway). */
  routes: readonly string[];
};

/** The default cluster name of a mesh's bus. */
export const CLUSTER_NAME = "mesh";

/**
 * Seconds the bus gives a client's TLS handshake (nats-server's `tls { timeout }`; its
 * authorization timeout is one second more, the server's default over TLS). After a bus restart
 * every agent's handshake arrives within seconds and, on a busy machine, they all progress together
 * and slowly: one given up half done is work thrown away and tried again, and with 5 s a fleet's
 * storm never ended (`npm run bench -- fleet`). A host agent waits as long (host/agent.ts
 * HOST_DIAL_TIMEOUT_MS). What it costs: a client stalling its handshake holds a socket this long
 * (max_connections bounds them).
 */
export const CLIENT_TLS_TIMEOUT_SECONDS = 30;

/**
 * The client port's TLS block: the mesh's own certificate (R34) and CLIENT_TLS_TIMEOUT_SECONDS for
 * the handshake. Pure; the fleet bench gives its mesh side's server the same block.
 */
export function clientTlsLines(certFile: string, keyFile: string): string[] {
  return [`tls {`, `  cert_file: "${certFile}"`, `  key_file: "${keyFile}"`, `  timeout: ${CLIENT_TLS_TIMEOUT_SECONDS}`, `}`];
}

/** The nats-server configuration text. Pure. */
export function renderServerConfig(options: ServerConfigOptions): string {
  const lines = [
    "# mesh-controller bus: written by the installer at genesis (installer/genesis.ts).",
    "# The user list is the include file below: the broker's host agent rewrites it on every push.",
    `server_name: "${options.serverName ?? "mesh-bus"}"`,
    `listen: "${options.listenHost}:${options.port}"`,
    ...(options.monitorPort > 0 ? [`http: "127.0.0.1:${options.monitorPort}"`] : []),
    ...(options.pidFile ? [`pid_file: "${options.pidFile}"`] : []),
    // R70: anyone the bus admits can make it log; its log shares the store's disk.
    `log_file: "${options.logFile}"`,
    `logfile_size_limit: ${options.logSizeLimit ?? BUS_LOG_SIZE_LIMIT}`,
    `max_payload: ${options.maxPayload ?? 1024 * 1024}`,
    `max_connections: 65536`,
    `max_control_line: 4096`,
    `write_deadline: "10s"`,
    ...clientTlsLines(options.certFile, options.keyFile),
    ...(options.cluster ? [
      `cluster {`,
      `  name: "${options.cluster.name}"`,
      `  listen: "${options.cluster.listenHost}:${options.cluster.port}"`,
      `  routes: [`,
      ...options.cluster.routes.map((route) => `    "nats-route://${route}"`),
      `  ]`,
      `  tls {`,
      `    cert_file: "${options.certFile}"`,
      `    key_file: "${options.keyFile}"`,
      `    ca_file: "${options.certFile}"`,
      `    timeout: 5`,
      `  }`,
      `}`,
    ] : []),
    `jetstream {`,
    `  store_dir: "${options.storeDir}"`,
    `  max_file_store: ${options.maxFileStore ?? 10 * 1024 * 1024 * 1024}`,
    `  max_memory_store: ${options.maxMemoryStore ?? 256 * 1024 * 1024}`,
    `}`,
    `include "${options.userListFile}"`,
    "",
  ];
  return lines.join("\n");
}

/**
 * The nats-server binary on the PATH (or on `searchPath`, a PATH-like list, when given), or
 * InstallerError with the one line that says how to get it.
 */
export function findNatsServer(searchPath?: string): string {
  const found = spawnSync("sh", ["-c", "command -v nats-server"], {
    encoding: "utf8",
    ...(searchPath === undefined ? {} : { env: { PATH: searchPath } }),
  });
  const path = (found.stdout ?? "").trim();
  if (found.status !== 0 || !path) {
    throw new InstallerError("nats-server is not installed: run `apt-get install -y nats-server` and try again");
  }
  return path;
}

/** Runs `nats-server -t -c <configFile>`; throws InstallerError with the server's complaint in one line. */
export function testServerConfig(binary: string, configFile: string): void {
  const run = spawnSync(binary, ["-t", "-c", configFile], { encoding: "utf8" });
  if (run.status !== 0) {
    const said = `${run.stderr ?? ""}\n${run.stdout ?? ""}`.trim().split("\n").filter(Boolean).pop() ?? "unknown error";
    throw new InstallerError(`nats-server refuses the configuration ${configFile}: ${said}`);
  }
}

/**
 * Resolves when `host:port` can be listened on; throws InstallerError ("port N on HOST is in use")
 * when it cannot. `source` names where the port came from in that message (default
 * MESH_BROKER_ADDRESS; the CLI passes its `--address` flag).
 */
export function assertPortFree(host: string, port: number, source = "MESH_BROKER_ADDRESS"): Promise<void> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", (error: NodeJS.ErrnoException) => {
      reject(
        new InstallerError(
          error.code === "EADDRINUSE"
            ? `port ${port} on ${host} is in use: stop what listens there or give ${source} another port`
            : `cannot listen on ${host}:${port}: ${error.code ?? error.message}`,
          { cause: error },
        ),
      );
    });
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve()));
  });
}

/** True when `host:port` can be listened on right now (see assertPortFree). */
export async function isPortFree(host: string, port: number): Promise<boolean> {
  try {
    await assertPortFree(host, port);
    return true;
  } catch {
    return false;
  }
}

/** A port free right now on `host` (bind port 0, read it, close): for tests and the embedded default. */
export function freePort(host = "127.0.0.1"): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen({ host, port: 0, exclusive: true }, () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * R70: the log file of the bus in the mesh folder `root`: `<root>/logs/bus.log`, or server `index`'s
 * (0-based) of a cluster, `<root>/logs/bus-<index+1>.log`. Pure.
 */
export function busLogFile(root: string, index?: number): string {
  return `${root}/logs/${index === undefined ? "bus" : clusterServerDir(index)}.log`;
}

/** The folder of server `index` (0-based) of a cluster inside the mesh folder: `bus-1`, `bus-2`, ... */
export function clusterServerDir(index: number): string {
  return `bus-${index + 1}`;
}

/**
 * The configuration of every server of a local cluster (`mesh up --cluster N`, issue 14): server
 * `i` is named `mesh-bus-<i+1>`, listens for clients on `clientPorts[i]` and for routes on
 * `routePorts[i]`, keeps its store in `<root>/bus-<i+1>/store`, its pid in `<root>/bus-<i+1>/bus.pid`,
 * logs to `<root>/logs/bus-<i+1>.log` (busLogFile, R70),
 * and includes its own copy of the user list (`bus-<i+1>/users.conf`: each server reads its own
 * configuration, R60); all present the one mesh certificate (R34) on clients and routes. Pure.
 * Throws Error when the port lists' lengths differ from `size` or `size` is below 1.
 */
export function clusterServerConfigs(options: {
  size: number;
  root: string;
  listenHost: string;
  clientPorts: readonly number[];
  routePorts: readonly number[];
  /** 0 leaves a server's monitoring off. */
  monitorPorts: readonly number[];
  certFile: string;
  keyFile: string;
  name?: string;
}): ServerConfigOptions[] {
  const { size } = options;
  if (size < 1 || options.clientPorts.length !== size || options.routePorts.length !== size || options.monitorPorts.length !== size) {
    throw new Error(`a cluster of ${size} needs ${size} client, route and monitoring ports each`);
  }
  return Array.from({ length: size }, (_, i) => {
    const dir = `${options.root}/${clusterServerDir(i)}`;
    return {
      serverName: `mesh-bus-${i + 1}`,
      listenHost: options.listenHost,
      port: options.clientPorts[i]!,
      monitorPort: options.monitorPorts[i]!,
      certFile: options.certFile,
      keyFile: options.keyFile,
      storeDir: `${dir}/${STORE_DIR}`,
      userListFile: USER_LIST_FILE,
      pidFile: `${dir}/bus.pid`,
      logFile: busLogFile(options.root, i),
      cluster: {
        name: options.name ?? CLUSTER_NAME,
        listenHost: options.listenHost,
        port: options.routePorts[i]!,
        routes: options.routePorts.filter((_, j) => j !== i).map((port) => `${options.listenHost}:${port}`),
      },
    };
  });
}
