import { spawn } from "node:child_process";
import { closeSync, existsSync, fstatSync, mkdirSync, openSync, readFileSync, readSync, readdirSync, rmSync } from "node:fs";
import { entryArguments, packageLayout, writeFileDurable } from "../files/index.ts";
import { join } from "node:path";
import { isAlive, pidFile, stopPid } from "../../installer/bus.ts";
import { exitRecordFile, readExitRecord, reserveExitRecord } from "./exitRecord.ts";

/**
 * The background processes of `mesh up` (the embedded default): the bus, the controller and the
 * local host agent, each detached, its pid in `<dir>/run/<name>.pid` and its output in
 * `<dir>/logs/<name>.log`, so `mesh down` can stop them and `mesh up` can find them again.
 */

/**
 * The processes `mesh up` runs, in the order they start (`mesh down` stops them in reverse: the
 * supervisor first, so it starts nothing `mesh down` stops).
 */
export const PROCESSES = ["bus", "controller", "host", "supervisor"] as const;
/** The process that starts again what stopped (src/up/supervisor.ts, R76). */
export const SUPERVISOR = "supervisor";
/** A process of `mesh up`: one of PROCESSES, or on a cluster `bus-<n>` and the standby `controller-2`. */
export type ProcessName = string;
/** The standby controller's process on a cluster (R61): it serves once the active one's lease lapses. */
export const STANDBY_CONTROLLER = "controller-2";

/**
 * The processes `mesh up` runs for a bus of `servers` servers, in start order: PROCESSES on one
 * server; on a cluster every server (`bus-1` ... `bus-<n>`), the active and the standby controller
 * (R61), the host.
 */
export function processesFor(servers: number): string[] {
  if (servers <= 1) return [...PROCESSES];
  return [...Array.from({ length: servers }, (_, i) => `bus-${i + 1}`), "controller", STANDBY_CONTROLLER, "host", SUPERVISOR];
}

/** The processes of the mesh in `dir` (processesFor its mesh.json's servers; PROCESSES without one). */
export function processesOf(dir: string): string[] {
  try {
    const mesh = JSON.parse(readFileSync(join(dir, "mesh.json"), "utf8")) as { servers?: unknown[] };
    return processesFor(Array.isArray(mesh.servers) ? mesh.servers.length : 1);
  } catch {
    return [...PROCESSES];
  }
}

/** The entry point the detached controller and host run: built, its .js; from sources, the .ts under tsx. */
const DAEMON = "src/up/daemonMain.ts";

/** The pid recorded for `name` in `dir` when that process is alive, else null. */
export function runningPid(dir: string, name: ProcessName): number | null {
  const file = pidFile(dir, name);
  if (!existsSync(file)) return null;
  const pid = Number(readFileSync(file, "utf8").trim());
  return Number.isInteger(pid) && pid > 0 && isAlive(pid) ? pid : null;
}

/** `<dir>/logs/<name>.log`: where a detached process of `mesh up` writes its lines. */
export function logFile(dir: string, name: ProcessName): string {
  return join(dir, "logs", `${name}.log`);
}

/**
 * The last line `name` wrote to its log in `dir`, without the time stamp the daemon puts first;
 * undefined when there is no log or it is empty. Reads the log's last 16 KiB only.
 */
export function lastLogLine(dir: string, name: ProcessName): string | undefined {
  const file = logFile(dir, name);
  if (!existsSync(file)) return undefined;
  const fd = openSync(file, "r");
  try {
    const size = fstatSync(fd).size;
    const length = Math.min(size, 16 * 1024);
    const tail = Buffer.alloc(length);
    readSync(fd, tail, 0, length, size - length);
    const last = tail.toString("utf8").split("\n").map((line) => line.trim()).filter(Boolean).at(-1);
    return last?.replace(/^\d{4}-\d\d-\d\dT\S+Z /, "");
  } finally {
    closeSync(fd);
  }
}

/**
 * Why `mesh up`'s controller in `dir` is not running: one line with the reason its exit record
 * holds (R76: the daemon writes it there, `controller: cannot start: ...`, even on a full disk) and
 * the log's path; a controller that left no reason (killed, or an older release) is said to have
 * left none, its log's last line named as only that. Undefined while a controller of `dir` runs
 * (the active one, or on a cluster the standby, R61), and where none was recorded (never started,
 * or stopped by `mesh down`, which removes the pids).
 */
export function controllerExit(dir: string): string | undefined {
  const controllers = ["controller", STANDBY_CONTROLLER].filter((name) => existsSync(pidFile(dir, name)));
  if (controllers.length === 0 || controllers.some((name) => runningPid(dir, name) !== null)) return undefined;
  const reason = controllers.map((name) => readExitRecord(exitRecordFile(dir, name))).find((r) => r !== undefined);
  if (reason !== undefined) return `the controller exited: ${reason} (its log: ${logFile(dir, "controller")})`;
  const last = lastLogLine(dir, "controller");
  return `the controller exited and recorded no reason (killed, or no room to write one); its log's last line: ${last ?? "none, the log is empty"} (its log: ${logFile(dir, "controller")})`;
}

/**
 * `<dir>/run/up`: written when `mesh up` starts a process of its own there and kept by `mesh down`,
 * so `mesh status` can tell `mesh up`'s mesh, stopped, from a mesh run otherwise (the bus writes its
 * own pid file in `run/` however it was started, a systemd unit included).
 */
function upMarker(dir: string): string {
  return join(dir, "run", "up");
}

/** Whether `mesh up` ever started its processes in `dir` (running or stopped since by `mesh down`). */
export function startedByUp(dir: string): boolean {
  return existsSync(upMarker(dir));
}

/** Marks `dir` as `mesh up`'s (startedByUp), once. */
export function markStartedByUp(dir: string): void {
  if (startedByUp(dir)) return;
  mkdirSync(join(dir, "run"), { recursive: true });
  writeFileDurable(upMarker(dir), "mesh up started its processes here; mesh down keeps this file\n", { mode: 0o644 });
}

/** Records `pid` as `name`'s in `dir`. */
export function recordPid(dir: string, name: ProcessName, pid: number): void {
  mkdirSync(join(dir, "run"), { recursive: true });
  writeFileDurable(pidFile(dir, name), `${pid}\n`, { mode: 0o644 });
}

/** What a daemon of `mesh up` runs (src/up/daemonProcess.ts). */
export type DaemonRole = "controller" | "host" | "supervisor";

/**
 * Starts `src/up/daemonMain.ts <role> <dir> <name>` (built: its .js, in node alone) detached (it
 * outlives `mesh up`), its output appended to
 * `<dir>/logs/<role>.log`, and records its pid. `env` is the environment it gets (the caller's
 * own, passed in: nothing here reads process.env). Returns the pid.
 */
export function spawnDaemon(dir: string, role: DaemonRole, env: Readonly<Record<string, string | undefined>>, name: ProcessName = role): number {
  mkdirSync(join(dir, "logs"), { recursive: true });
  mkdirSync(join(dir, "run"), { recursive: true });
  // R76: the room for why it will stop, taken now: on a full disk later, the reason still fits.
  try { reserveExitRecord(exitRecordFile(dir, name)); } catch { /* no room now: the daemon tries a new file when it stops */ }
  const out = openSync(logFile(dir, name), "a");
  const child = spawn(process.execPath, [...entryArguments(DAEMON), role, dir, name], {
    // From sources, tsx resolves from the working folder: the package's root.
    cwd: packageLayout().root,
    detached: true,
    stdio: ["ignore", out, out],
    env: { ...env },
  });
  closeSync(out);
  child.unref();
  if (child.pid === undefined) throw new Error(`could not start the ${role}`);
  recordPid(dir, name, child.pid);
  markStartedByUp(dir);
  return child.pid;
}

/**
 * Stops every process recorded in `<dir>/run` (host, then the controllers, then the bus's servers: processesOf) and removes their
 * pid files. Returns the names of those that were running.
 */
export async function stopAll(dir: string): Promise<ProcessName[]> {
  const stopped: ProcessName[] = [];
  for (const name of processesOf(dir).reverse()) {
    const pid = runningPid(dir, name);
    if (pid !== null) {
      await stopPid(pid);
      stopped.push(name);
    }
    rmSync(pidFile(dir, name), { force: true });
  }
  const run = join(dir, "run");
  if (existsSync(run)) for (const f of readdirSync(run)) if (f.endsWith(".pid")) rmSync(join(run, f), { force: true });
  return stopped;
}
