/**
 * The entry point of the processes `mesh up` leaves running: `daemon.ts controller <dir>` and
 * `daemon.ts host <dir>`. Each reads what it needs from the mesh folder (the controller its
 * controller.env through parseControllerConfig, R35; the host its state folder and the bus's
 * include file), logs one line per event to stdout (the caller sends it to `<dir>/logs`), and stops
 * cleanly on SIGTERM or SIGINT.
 */
import { join } from "node:path";
import { readFileSync } from "node:fs";
import { parseControllerConfig } from "../config.ts";
import { startHost, readCredentialFile, NODE_CREDENTIAL_FILE, type Host } from "../host/index.ts";
import { startController, type Controller } from "../bootstrap/main.ts";
import { START_AGAIN_PAUSE_MS, startsAgainAfter } from "../bootstrap/startBound.ts";
import { setTimeout as sleep } from "node:timers/promises";
import { meshPaths, readEnvFile, type MeshPaths } from "../../installer/genesis.ts";
import { HOST_DIR, LOCAL_NODE_FILE, busReloadOptions, hasStandby, type Launcher } from "./up.ts";

/** A part of the mesh running in this process. */
export type Running = { stop(): Promise<void> };

/**
 * Starts the controller of the mesh in `paths` in this process: its configuration is the mesh's
 * controller.env, parsed once (R35). Throws ConfigError (one line) for bad configuration.
 */
export async function runController(paths: MeshPaths, log: (line: string) => void, options: { name?: string; signal?: AbortSignal } = {}): Promise<Running> {
  const config = parseControllerConfig(readEnvFile(paths.controllerEnv));
  const name = options.name ?? "controller";
  let stopped = false;
  let current: Controller | undefined;
  let abort = new AbortController();
  let restarting: Promise<void> = Promise.resolve();
  // R61: a controller that lost the lease (it could not renew it in time) stops serving and stands
  // by again, so the mesh keeps a standby.
  const launch = (signal?: AbortSignal): Promise<Controller> => startController(config, {
    log: { info: (line) => log(`${name}: ${line}`), error: (line) => log(`${name}: error: ${line}`) },
    ...(signal ? { signal } : {}),
    onLeaseLost: () => {
      if (stopped) return;
      log(`${name}: standing by again (R61)`);
      const lost = current;
      current = undefined;
      abort = new AbortController();
      const again = abort.signal;
      restarting = (async () => {
        await lost?.stop().catch(() => undefined);
        if (stopped) return;
        current = await launchServing(again).catch(() => undefined);
      })();
    },
  });
  /**
   * Launches until a start serves: one that stalled holding the lease, or that a passing bus
   * condition failed (startsAgainAfter), gave the lease up and stands by again (R61).
   */
  const launchServing = async (signal?: AbortSignal): Promise<Controller> => {
    for (;;) {
      try {
        return await launch(signal);
      } catch (error) {
        if (!startsAgainAfter(error) || stopped || signal?.aborted) throw error;
        log(`${name}: the start failed (${error instanceof Error ? error.message.split("\n")[0] : String(error)}): standing by again (R61)`);
        await sleep(START_AGAIN_PAUSE_MS, undefined, signal ? { signal } : {}).catch(() => undefined);
      }
    }
  };
  current = await launchServing(options.signal);
  return {
    stop: async () => {
      stopped = true;
      abort.abort();
      await restarting;
      await current?.stop();
    },
  };
}

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

/** Runs `controller <dir>` or `host <dir>` until SIGTERM/SIGINT (src/up/daemonMain.ts calls it). */
export async function main(argv: readonly string[]): Promise<void> {
  const [role, dir] = argv;
  const log = (line: string) => { process.stdout.write(`${new Date().toISOString()} ${line}\n`); };
  if ((role !== "controller" && role !== "host") || !dir) {
    process.stderr.write("usage: daemon.ts controller|host <mesh dir>\n");
    process.exitCode = 2;
    return;
  }
  const paths = meshPaths(dir);
  let running: Running;
  try {
    running = role === "controller" ? await runController(paths, log) : runHost(paths, log);
  } catch (error) {
    log(`${role}: cannot start: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`);
    process.exitCode = 1;
    return;
  }
  log(`${role}: running (pid ${process.pid})`);
  const stop = () => {
    void running.stop().finally(() => { log(`${role}: stopped`); process.exit(0); });
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
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
