import { mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { NAME_PATTERN } from "../names.ts";
import { writeFileDurable } from "../files/index.ts";

/**
 * The process of each module a runner started, kept on disk (R72): an agent killed without a
 * goodbye (kill -9, a crash, the OOM killer) leaves its modules running in their own process
 * groups, and the agent started again would run each module twice. A file per module,
 * `<stateDir>/run/modules/<module>.pid`, holds the group's leader and its start time (the 22nd
 * field of /proc/<pid>/stat), so a pid the kernel gave to another process since is never signalled.
 */

/** What a module's pid file holds. */
type ModulePid = { pid: number; startedAt: string; graceMs: number };

function pidDir(stateDir: string): string {
  return join(stateDir, "run", "modules");
}

/** The fields of /proc/<pid>/stat from the third (state) on, or null when it is gone (or no /proc). */
function statOf(pid: number): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces and parentheses: count fields after its last ")".
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return null;
  }
}

/** The start time of process `pid` in clock ticks since boot (field 22), or null when it is gone. */
export function processStartOf(pid: number): string | null {
  return statOf(pid)?.[19] ?? null;
}

/** Records that `module`'s process is `pid` (its group's leader), stopped within `graceMs`. Never throws. */
export function rememberModulePid(stateDir: string, module: string, pid: number, graceMs: number): void {
  const startedAt = processStartOf(pid);
  if (startedAt === null) return;
  const entry: ModulePid = { pid, startedAt, graceMs };
  try {
    mkdirSync(pidDir(stateDir), { recursive: true, mode: 0o700 });
    writeFileDurable(join(pidDir(stateDir), `${module}.pid`), `${JSON.stringify(entry)}\n`);
  } catch {
    // A full disk loses the record, never the module: only a later agent's clean-up misses it.
  }
}

/** Forgets `module`'s pid file when it still names `pid` (its process ended). */
export function forgetModulePid(stateDir: string, module: string, pid: number): void {
  const file = join(pidDir(stateDir), `${module}.pid`);
  if (readPid(file)?.pid === pid) rmSync(file, { force: true });
}

function readPid(file: string): ModulePid | null {
  try {
    const entry = JSON.parse(readFileSync(file, "utf8")) as Partial<ModulePid>;
    return typeof entry.pid === "number" && entry.pid > 1 && typeof entry.startedAt === "string"
      ? { pid: entry.pid, startedAt: entry.startedAt, graceMs: typeof entry.graceMs === "number" ? entry.graceMs : 10_000 }
      : null;
  } catch {
    return null;
  }
}

/**
 * Stops the process groups a previous agent on `stateDir` left running (their leader still the
 * process it started): SIGTERM to the group, SIGKILL after its grace. Resolves, per module, when
 * its leftover is gone; each pid file is removed. Never throws.
 */
export function stopLeftovers(stateDir: string, log: (line: string) => void): Map<string, Promise<void>> {
  const gone = new Map<string, Promise<void>>();
  let names: string[] = [];
  try { names = readdirSync(pidDir(stateDir)); } catch { return gone; }
  for (const name of names) {
    const module = name.replace(/\.pid$/, "");
    const file = join(pidDir(stateDir), name);
    const entry = NAME_PATTERN.test(module) ? readPid(file) : null;
    rmSync(file, { force: true });
    if (entry === null || processStartOf(entry.pid) !== entry.startedAt) continue;
    log(`runner: module ${module} was left running by an agent that stopped without stopping it (pid ${entry.pid}): stopping it`);
    gone.set(module, stopGroup(entry));
  }
  return gone;
}

/** SIGTERM to `entry`'s group, SIGKILL after its grace; resolves once its leader is gone. */
async function stopGroup({ pid, startedAt, graceMs }: ModulePid): Promise<void> {
  const signal = (name: NodeJS.Signals) => { try { process.kill(-pid, name); } catch { /* gone */ } };
  const alive = () => processStartOf(pid) === startedAt && !isZombie(pid);
  signal("SIGTERM");
  const deadline = Date.now() + graceMs;
  while (alive() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  if (alive()) signal("SIGKILL");
  while (alive()) await new Promise((r) => setTimeout(r, 20));
}

/** Whether `pid` has exited and waits for a parent to reap it (an orphan's is reaped by init). */
function isZombie(pid: number): boolean {
  return statOf(pid)?.[0] === "Z";
}
