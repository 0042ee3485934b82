import { spawn } from "node:child_process";
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { writeFileDurable } from "../files/index.ts";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { isAlive, pidFile, stopPid } from "../../installer/bus.ts";

/**
 * The background processes of `mesh up` (the embedded default): the bus, the controller and the
 * local host agent, each detached, its pid in `<dir>/run/<name>.pid` and its output in
 * `<dir>/logs/<name>.log`, so `mesh down` can stop them and `mesh up` can find them again.
 */

/** The processes `mesh up` runs, in the order they start (`mesh down` stops them in reverse). */
export const PROCESSES = ["bus", "controller", "host"] as const;
export type ProcessName = (typeof PROCESSES)[number];

/** The repository's root (where `tsx` resolves from). */
const ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** The entry point the detached controller and host run. */
const DAEMON = fileURLToPath(new URL("./daemonMain.ts", import.meta.url));

/** The pid recorded for `name` in `dir` when that process is alive, else null. */
export function runningPid(dir: string, name: ProcessName): number | null {
  const file = pidFile(dir, name);
  if (!existsSync(file)) return null;
  const pid = Number(readFileSync(file, "utf8").trim());
  return Number.isInteger(pid) && pid > 0 && isAlive(pid) ? pid : null;
}

/** Records `pid` as `name`'s in `dir`. */
export function recordPid(dir: string, name: ProcessName, pid: number): void {
  mkdirSync(join(dir, "run"), { recursive: true });
  writeFileDurable(pidFile(dir, name), `${pid}\n`, { mode: 0o644 });
}

/**
 * Starts `src/up/daemonMain.ts <role> <dir>` detached (it outlives `mesh up`), its output appended to
 * `<dir>/logs/<role>.log`, and records its pid. `env` is the environment it gets (the caller's
 * own, passed in: nothing here reads process.env). Returns the pid.
 */
export function spawnDaemon(dir: string, role: "controller" | "host", env: Readonly<Record<string, string | undefined>>): number {
  mkdirSync(join(dir, "logs"), { recursive: true });
  const out = openSync(join(dir, "logs", `${role}.log`), "a");
  const child = spawn(process.execPath, ["--import", "tsx", DAEMON, role, dir], {
    cwd: ROOT,
    detached: true,
    stdio: ["ignore", out, out],
    env: { ...env },
  });
  closeSync(out);
  child.unref();
  if (child.pid === undefined) throw new Error(`could not start the ${role}`);
  recordPid(dir, role, child.pid);
  return child.pid;
}

/**
 * Stops every process recorded in `<dir>/run` (host, then controller, then bus) and removes their
 * pid files. Returns the names of those that were running.
 */
export async function stopAll(dir: string): Promise<ProcessName[]> {
  const stopped: ProcessName[] = [];
  for (const name of [...PROCESSES].reverse()) {
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
