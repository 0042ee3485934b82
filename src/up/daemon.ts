/**
 * The entry point of the processes `mesh up` leaves running: `daemon.ts controller <dir>`,
 * `daemon.ts host <dir>` and `daemon.ts supervisor <dir>`. Each reads what it needs from the mesh
 * folder (the controller its controller.env through parseControllerConfig, R35; the host its state
 * folder and the bus's include file), logs one line per event to stdout (the caller sends it to
 * `<dir>/logs`), says why it stops in its exit record (R76), and stops cleanly on SIGTERM or SIGINT.
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
import { processLog } from "../bootstrap/log.ts";
import { exitRecordFile, recordExit } from "./exitRecord.ts";
import { supervise } from "./supervisor.ts";

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

/** One line of what `error` says (an Error's first line). */
function firstLine(error: unknown): string {
  return error instanceof Error ? error.message.split("\n")[0]! : String(error);
}

/**
 * Runs `controller|host|supervisor <dir> [<name>]` until SIGTERM/SIGINT (src/up/daemonMain.ts
 * calls it with the process's environment, which the supervisor passes on to what it starts).
 * R76: its log never ends it (processLog), and why it stops (it could not start, an error nothing
 * caught, a signal) is written to its exit record, which needs no new space (src/up/exitRecord.ts).
 */
export async function main(argv: readonly string[], env: Readonly<Record<string, string | undefined>> = {}): Promise<void> {
  const [role, dir, given] = argv;
  const log = processLog();
  if ((role !== "controller" && role !== "host" && role !== "supervisor") || !dir) {
    log("usage: daemon.ts controller|host|supervisor <mesh dir> [<process name>]");
    process.exitCode = 2;
    return;
  }
  const name = given ?? role;
  const paths = meshPaths(dir);
  const stopping = (reason: string, code: number) => {
    log(reason);
    recordExit(exitRecordFile(paths.dir, name), reason);
    process.exitCode = code;
  };
  for (const event of ["uncaughtException", "unhandledRejection"] as const) {
    process.on(event, (error: unknown) => {
      if (error instanceof Error && error.stack) log(`${name}: ${error.stack}`);
      stopping(`${name}: stopped by an error nothing caught: ${firstLine(error)}`, 1);
      process.exit(1);
    });
  }
  let running: Running;
  try {
    running = role === "controller" ? await runController(paths, log, { name })
      : role === "host" ? runHost(paths, log)
        : runSupervisor(paths.dir, log, env);
  } catch (error) {
    stopping(`${name}: cannot start: ${firstLine(error)}`, 1);
    return;
  }
  log(`${name}: running (pid ${process.pid})`);
  const stop = (signal: string) => {
    void running.stop().finally(() => { stopping(`${name}: stopped on ${signal}`, 0); process.exit(0); });
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
}

/** Runs the supervisor of the mesh in `dir` in this process (src/up/supervisor.ts) until stopped. */
function runSupervisor(dir: string, log: (line: string) => void, env: Readonly<Record<string, string | undefined>>): Running {
  const abort = new AbortController();
  const done = supervise(dir, log, { env, signal: abort.signal });
  return { stop: async () => { abort.abort(); await done; } };
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
