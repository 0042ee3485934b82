/**
 * The local host agent of a mesh folder run in this process (`mesh up`'s host daemon,
 * src/up/daemonProcess.ts), and the launcher that runs the controller and the host in this
 * process (tests, and `up` embedded in a program).
 */
import { join } from "node:path";
import { readFileSync } from "node:fs";
import { startHost, readCredentialFile, NODE_CREDENTIAL_FILE, type Host } from "../host/index.ts";
import type { MeshPaths } from "../../installer/genesis.ts";
import { HOST_DIR, LOCAL_NODE_FILE, busReloadOptions, hasStandby, type Launcher } from "./up.ts";
import { runController, type Running } from "./controllerDaemon.ts";

/**
 * Starts the local host agent of the mesh in `paths` in this process: its state folder is
 * `<dir>/host`, its credential the one saved there at enrolment (read at every connection
 * attempt), and it holds the bus's include file, configuration, pid file and monitoring endpoint,
 * so it can write the user list and reload the bus when its node holds mesh-broker.
 */
export function runHost(paths: MeshPaths, log: (line: string) => void, onReport?: Parameters<typeof startHost>[0]["onReport"]): Host {
  const stateDir = join(paths.dir, HOST_DIR);
  const node = readFileSync(join(stateDir, LOCAL_NODE_FILE), "utf8").trim();
  return startHost({
    stateDir,
    node,
    credential: () => readCredentialFile(join(stateDir, NODE_CREDENTIAL_FILE), stateDir),
    bus: busReloadOptions(paths),
    log,
    backoff: { initialMs: 200, maxMs: 5_000 },
    ...(onReport ? { onReport } : {}),
  });
}

/** A launcher running the controller and the host in this process (tests, and `up` embedded in a program). */
export type InProcessLauncher = Launcher & {
  /** The running host agent, once started. */
  readonly hostAgent: Host | undefined;
  /** Stops the host, then the controller (the bus is a recorded process: stopAll stops it). */
  stop(): Promise<void>;
  /** Stops the controller alone (a restart test starts it again with `controller`). */
  stopController(): Promise<void>;
};

/** A launcher running the controller and the host in this process, logging to `log`. */
export function inProcessLauncher(log: (line: string) => void): InProcessLauncher {
  let controller: Running | undefined;
  /** On a cluster, the standby (R61): its start resolves only once it holds the lease. */
  let standby: { abort: AbortController; started: Promise<Running | undefined> } | undefined;
  let host: Host | undefined;
  const stopStandby = async () => {
    if (!standby) return;
    const { abort, started } = standby;
    standby = undefined;
    abort.abort();
    await (await started)?.stop();
  };
  return {
    get hostAgent() { return host; },
    async controller(paths) {
      controller ??= await runController(paths, log);
      if (!standby && hasStandby(paths)) {
        const abort = new AbortController();
        const started = runController(paths, log, { name: "controller-2", signal: abort.signal }).catch(() => undefined);
        standby = { abort, started };
      }
    },
    async host(paths) {
      host ??= runHost(paths, log);
    },
    async stopController() {
      await stopStandby();
      await controller?.stop();
      controller = undefined;
    },
    async stop() {
      await host?.stop();
      host = undefined;
      await stopStandby();
      await controller?.stop();
      controller = undefined;
    },
  };
}
