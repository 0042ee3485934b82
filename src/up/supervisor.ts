import { existsSync, statfsSync } from "node:fs";
import { dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { busServers, localHost, meshPaths, readMeshFile } from "../../installer/genesis.ts";
import { findNatsServer, STORE_DIR } from "../../installer/serverConfig.ts";
import { pidFile, startBus, stopPid } from "../../installer/bus.ts";
import { exitRecordFile, readExitRecord } from "./exitRecord.ts";
import { SUPERVISOR, processesOf, recordPid, runningPid, spawnDaemon } from "./processes.ts";

/**
 * The supervisor of `mesh up` (R76: the mesh recovers by itself when space returns): a process of
 * its own that, every SUPERVISE_EVERY_MS, starts again each process of the mesh that `mesh up`
 * started and that is no longer running (its pid still recorded: `mesh down` removes the pids, so
 * what it stopped stays stopped), and restarts a bus server whose JetStream stopped answering
 * (nats-server 2.9.10 stays so after its disk was full, until it is restarted) once its store's
 * disk has room again (a restart on a disk still full changes nothing). Each start is said
 * in its log with why; a process that keeps stopping is started again after a pause that doubles
 * up to RESTART_PAUSE_MAX_MS. Kept simple on purpose: no health beyond "alive" for the controller
 * and the host (each retries the bus by itself), and JetStream asked through the monitoring port.
 */

/** How often the supervisor looks. */
export const SUPERVISE_EVERY_MS = 2_000;
/** Checks in a row a bus server's JetStream must not answer before it is restarted. */
export const SILENT_CHECKS = 3;
/** The first pause before a process that stopped again is started again; it doubles up to the max. */
export const RESTART_PAUSE_MS = 2_000;
export const RESTART_PAUSE_MAX_MS = 60_000;
/** How long a process must run before its pause starts from RESTART_PAUSE_MS again. */
export const STABLE_AFTER_MS = 60_000;
/** The free space a silent bus's store needs before it is restarted: on a disk still full, a restart changes nothing. */
export const STORE_FREE_BYTES = 1024 * 1024;

/** One process as the supervisor sees it at a check. */
export type Observed = {
  name: string;
  /** Its pid is recorded in `<dir>/run` (started by `mesh up`, not stopped by `mesh down`). */
  recorded: boolean;
  alive: boolean;
  /** A bus server's JetStream: answered its monitoring port, or stayed silent; absent for other processes. */
  jetstream?: "answers" | "silent";
  /** A bus server's: the bytes free on its store's file system (absent when unknown). */
  storeFreeBytes?: number;
};

/** What the supervisor remembers of one process between checks. */
export type Watched = { restarts: number; lastRestartAt: number; silentChecks: number };

/** A process to start again now, and why (said in the log). */
export type Restart = { name: string; why: string };

/** The pause before restart number `restarts + 1` of a process. Pure. */
export function restartPause(restarts: number): number {
  return Math.min(RESTART_PAUSE_MS * 2 ** Math.max(0, restarts - 1), RESTART_PAUSE_MAX_MS);
}

/**
 * Which processes to start again at `now`, and what to remember until the next check (a new map).
 * A process not recorded is left alone and forgotten; one that is dead, or a bus server whose
 * JetStream was silent SILENT_CHECKS times in a row, is started again once its pause has passed;
 * a silent bus whose store has less than STORE_FREE_BYTES free waits for space, named in
 * `waiting` once, when it reaches SILENT_CHECKS. Pure.
 */
export function planRestarts(observed: readonly Observed[], memory: ReadonlyMap<string, Watched>, now: number): { restarts: Restart[]; waiting: Restart[]; memory: Map<string, Watched> } {
  const next = new Map<string, Watched>();
  const restarts: Restart[] = [];
  const waiting: Restart[] = [];
  for (const process of observed) {
    if (!process.recorded) continue;
    const known = memory.get(process.name) ?? { restarts: 0, lastRestartAt: -Infinity, silentChecks: 0 };
    const silentChecks = process.alive && process.jetstream === "silent" ? known.silentChecks + 1 : 0;
    const stable = process.alive && now - known.lastRestartAt >= STABLE_AFTER_MS;
    const watched = { ...known, silentChecks, restarts: stable ? 0 : known.restarts };
    const full = process.storeFreeBytes !== undefined && process.storeFreeBytes < STORE_FREE_BYTES;
    if (process.alive && full && silentChecks === SILENT_CHECKS) {
      waiting.push({ name: process.name, why: `its JetStream did not answer ${silentChecks} checks in a row and its store's disk has ${process.storeFreeBytes} bytes free: it is restarted once ${STORE_FREE_BYTES} are` });
    }
    const why = !process.alive ? "it is not running"
      : silentChecks >= SILENT_CHECKS && !full ? `its JetStream did not answer ${silentChecks} checks in a row (after a full disk nats-server stays so until restarted)`
        : null;
    if (why !== null && now - known.lastRestartAt >= restartPause(watched.restarts)) {
      restarts.push({ name: process.name, why });
      next.set(process.name, { restarts: watched.restarts + 1, lastRestartAt: now, silentChecks: 0 });
    } else {
      next.set(process.name, watched);
    }
  }
  return { restarts, waiting, memory: next };
}

/** Whether the JetStream of the server whose monitoring endpoint is `monitorUrl` answers /jsz within `timeoutMs`. */
async function jetstreamAnswers(monitorUrl: string, timeoutMs = 3_000): Promise<"answers" | "silent"> {
  try {
    const response = await fetch(`${monitorUrl}/jsz`, { signal: AbortSignal.timeout(timeoutMs) });
    await response.text();
    return response.ok ? "answers" : "silent";
  } catch {
    return "silent";
  }
}

/** Every process of the mesh in `dir` but the supervisor, as it is now. */
async function observe(dir: string): Promise<Observed[]> {
  const mesh = readMeshFile(dir);
  const servers = busServers(meshPaths(dir), mesh);
  const monitors = new Map(servers.map((s) => [s.process, s.monitorUrl]));
  const configs = new Map(servers.map((s) => [s.process, s.configFile]));
  const monitored = (name: string) => (mesh.servers ? true : mesh.monitorPort > 0) && monitors.has(name);
  return Promise.all(processesOf(dir).filter((name) => name !== SUPERVISOR).map(async (name): Promise<Observed> => {
    const alive = runningPid(dir, name) !== null;
    const recorded = existsSync(pidFile(dir, name));
    if (!alive || !monitored(name)) return { name, recorded, alive };
    const free = freeBytes(join(dirname(configs.get(name)!), STORE_DIR));
    return { name, recorded, alive, jetstream: await jetstreamAnswers(monitors.get(name)!), ...(free === undefined ? {} : { storeFreeBytes: free }) };
  }));
}

/** The bytes free to this user on the file system of `dir`, or undefined when it cannot be read. */
function freeBytes(dir: string): number | undefined {
  try {
    const fs = statfsSync(dir);
    return fs.bavail * fs.bsize;
  } catch {
    return undefined;
  }
}

/** Starts `name` of the mesh in `dir` again: a bus server (stopped first when alive: its JetStream is silent), or a daemon. */
async function startAgain(dir: string, name: string, env: Readonly<Record<string, string | undefined>>): Promise<number> {
  const paths = meshPaths(dir);
  const mesh = readMeshFile(dir);
  const server = busServers(paths, mesh).find((s) => s.process === name);
  if (server === undefined) return spawnDaemon(dir, name === "host" ? "host" : "controller", env, name);
  const pid = runningPid(dir, name);
  if (pid !== null) await stopPid(pid);
  const bus = await startBus({
    binary: findNatsServer(), configFile: server.configFile, logFile: server.logFile,
    host: localHost(mesh.listenHost), port: server.port, fingerprint: mesh.fingerprint, detached: true,
  });
  try {
    recordPid(dir, name, bus.pid);
  } catch (error) {
    // A bus whose pid is not recorded is one nobody stops (`mesh down`) or sees: it goes again.
    await bus.stop();
    throw error;
  }
  return bus.pid;
}

/**
 * Supervises the mesh in `dir` (see the module comment) until `signal` aborts: looks every
 * `everyMs`, starts again what planRestarts names and says so in `log`. `env` is what a daemon it
 * starts gets. Never throws: a failed start is said and tried again after its pause.
 */
export async function supervise(
  dir: string,
  log: (line: string) => void,
  options: { env: Readonly<Record<string, string | undefined>>; signal: AbortSignal; everyMs?: number; now?: () => number },
): Promise<void> {
  const now = options.now ?? Date.now;
  let memory = new Map<string, Watched>();
  while (!options.signal.aborted) {
    try {
      const planned = planRestarts(await observe(dir), memory, now());
      memory = planned.memory;
      for (const { name, why } of planned.waiting) log(`supervisor: ${name} waits: ${why}`);
      for (const { name, why } of planned.restarts) {
        if (options.signal.aborted) break;
        const said = readExitRecord(exitRecordFile(dir, name));
        log(`supervisor: starting ${name} again: ${why}${said === undefined ? "" : ` (it said: ${said})`}`);
        try {
          log(`supervisor: ${name} started again (pid ${await startAgain(dir, name, options.env)})`);
        } catch (error) {
          log(`supervisor: ${name} could not be started again: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}; trying again in ${Math.round(restartPause(memory.get(name)?.restarts ?? 1) / 1000)} s`);
        }
      }
    } catch (error) {
      log(`supervisor: could not look at the mesh in ${dir}: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`);
    }
    await sleep(options.everyMs ?? SUPERVISE_EVERY_MS, undefined, { signal: options.signal }).catch(() => undefined);
  }
}
