import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { accessSync, constants, existsSync, readFileSync } from "node:fs";
import { delimiter, join, resolve } from "node:path";
import type { Declaration } from "../contracts/declaration.ts";
import type { ModuleRun } from "../contracts/report.ts";
import { NAME_PATTERN } from "../names.ts";
import { packageFile } from "../files/packageFiles.ts";
import { moduleLogFile, openModuleLog, readModuleLog, type LogTail, type ModuleLog } from "./moduleLog.ts";
import {
  containerRuntime, exitsInARow, planRuns, restartDelay, runWish, RESTART_INITIAL_MS, RESTART_MAX_MS, RESTART_RESET_AFTER_MS, RUNNING_AFTER_MS,
  type NotRun, type RunSpec,
} from "./runPlan.ts";

/**
 * The module runner (R72), the shell of runPlan.ts: each module of the applied declaration whose
 * `run` names a command (or an image, through podman or docker) is a supervised child process in
 * its folder (`<stateDir>/modules/<module>`) with its `env` file's variables, its output (stdout
 * and stderr) in `<stateDir>/logs/<module>.log` (moduleLog.ts). A module that exits is started again after
 * restartDelay; one no longer declared is stopped (SIGTERM to its process group, SIGKILL after its
 * grace); one whose env changed (a rotation) is restarted. Nothing a module does stops the agent
 * or another module: a command that does not exist is an exit like any other.
 */

/** Caller settings of moduleRunner. */
export type RunnerOptions = {
  stateDir: string;
  log: (line: string) => void;
  /** Called when a module's run state changed (the agent publishes its report again). */
  onChange: () => void;
  /** Restart pauses: first and longest, ms; and how long a run resets them (tests shorten them). */
  restart?: { initialMs?: number; maxMs?: number; resetAfterMs?: number };
  /** Variables every module inherits besides its env file (default: PATH and HOME of the agent). */
  baseEnv?: Record<string, string>;
  /** Whether `program` is on PATH (default: looks through PATH). */
  onPath?: (program: string) => boolean;
};

/** The runner of one host agent. */
export type Runner = {
  /** Runs what `declaration` asks (its files are applied): starts, stops and restarts modules. */
  apply(declaration: Declaration): void;
  /** Every declared module's run state, sorted by module (the report's `modules`). */
  states(): ModuleRun[];
  /** The tail of a module's output (running or not, as long as its log is kept), or null when this node has none. */
  logs(module: string, lines: number, maxBytes?: number, from?: number): LogTail | null;
  /** Stops every module (each within its grace). */
  stopAll(): Promise<void>;
};

/** One supervised module. */
type Supervised = {
  spec: RunSpec;
  child?: ChildProcess;
  state: ModuleRun["state"];
  restarts: number;
  inARow: number;
  startedAt: number;
  code?: number | null;
  signal?: string;
  error?: string;
  backoffUntil?: number;
  timer?: NodeJS.Timeout;
  /** Set once it is to stop for good: resolves when its process is gone. */
  stopped?: Promise<void>;
  log?: ModuleLog;
};

/** Whether `program` is an executable found on `path`. */
function onPathOf(path: string | undefined): (program: string) => boolean {
  return (program) => (path ?? "").split(delimiter).filter(Boolean).some((dir) => {
    try {
      accessSync(join(dir, program), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** The spec of each module `declaration` asks to run (its env file read from its folder), and the others with why. */
function wantedRuns(stateDir: string, declaration: Declaration, runtime: string | null): { specs: Map<string, RunSpec>; skipped: NotRun[] } {
  const specs = new Map<string, RunSpec>();
  const skipped: NotRun[] = [];
  for (const entry of declaration.modules) {
    const dir = resolve(stateDir, "modules", entry.module);
    const envFile = join(dir, "env");
    const envText = existsSync(envFile) ? readFileSync(envFile, "utf8") : undefined;
    const wish = runWish(entry, { dir, envText, envDigest: createHash("sha256").update(envText ?? "").digest("hex"), runtime });
    if (wish.kind === "run") specs.set(entry.module, wish.spec);
    else skipped.push(wish.notRun);
  }
  return { specs, skipped };
}

/** A supervised module's run state as the report says it (R72; R73: what it was started with). */
function runStateOf(s: Supervised): ModuleRun {
  return {
    module: s.spec.module, state: s.state, restarts: s.restarts,
    ...(s.child?.pid === undefined ? {} : { pid: s.child.pid }),
    ...(s.state === "exited" && s.code !== undefined ? { code: s.code } : {}),
    ...(s.state === "exited" && s.signal ? { signal: s.signal } : {}),
    ...(s.state === "exited" && s.error ? { error: s.error } : {}),
    ...(s.backoffUntil === undefined ? {} : { backoffUntil: new Date(s.backoffUntil).toISOString() }),
    ...(s.child === undefined ? {} : { startedWithEnv: s.spec.envDigest, ...(s.spec.nkey ? { startedWithNkey: s.spec.nkey } : {}) }),
  };
}

/** Stops `s` for good: SIGTERM to its process group, SIGKILL after its grace. */
function stop(s: Supervised): Promise<void> {
  if (s.stopped) return s.stopped;
  if (s.timer) clearTimeout(s.timer);
  s.timer = undefined;
  const child = s.child;
  s.stopped = new Promise<void>((done) => {
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) { s.log?.close(); done(); return; }
    s.state = "stopping";
    const signal = (name: NodeJS.Signals) => {
      try { process.kill(-child.pid!, name); } catch { child.kill(name); }
    };
    const kill = setTimeout(() => signal("SIGKILL"), s.spec.graceMs);
    child.once("close", () => { clearTimeout(kill); s.log?.close(); done(); });
    signal("SIGTERM");
  });
  return s.stopped;
}

/**
 * What every module inherits besides its env file: the agent's HOME and LANG, and its PATH with
 * this package's bin/ first, so a manifest may run the package's own programs (`mesh-greeter`)
 * however the package was installed (a clone, a tarball, `npm install -g`).
 */
function agentBaseEnv(): Record<string, string> {
  const env = Object.fromEntries(["HOME", "LANG"].flatMap((k) => (process.env[k] === undefined ? [] : [[k, process.env[k]!]])));
  return { ...env, PATH: [packageFile("bin"), process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin"].join(delimiter) };
}

/** Starts a runner with nothing running (RunnerOptions). */
export function moduleRunner(options: RunnerOptions): Runner {
  const { stateDir, log } = options;
  const initialMs = options.restart?.initialMs ?? RESTART_INITIAL_MS;
  const maxMs = options.restart?.maxMs ?? RESTART_MAX_MS;
  const resetAfterMs = options.restart?.resetAfterMs ?? RESTART_RESET_AFTER_MS;
  const baseEnv = options.baseEnv ?? agentBaseEnv();
  const runtime = containerRuntime(options.onPath ?? onPathOf(baseEnv.PATH));
  const running = new Map<string, Supervised>();
  let skipped: NotRun[] = [];
  let stopping = false;

  const changed = () => { if (!stopping) options.onChange(); };

  const start = (s: Supervised) => {
    s.timer = undefined;
    s.backoffUntil = undefined;
    s.state = "starting";
    s.startedAt = Date.now();
    s.log ??= openModuleLog(moduleLogFile(stateDir, s.spec.module));
    s.log.write(`--- mesh: starting ${s.spec.argv.join(" ")} (start ${s.restarts + 1}) at ${new Date().toISOString()}\n`);
    let child: ChildProcess;
    try {
      child = spawn(s.spec.argv[0]!, s.spec.argv.slice(1), {
        cwd: s.spec.dir, env: { ...baseEnv, ...s.spec.env }, stdio: ["ignore", "pipe", "pipe"], detached: true,
      });
    } catch (error) {
      exited(s, undefined, null, null, error);
      return;
    }
    s.child = child;
    child.stdout?.on("data", (chunk: Buffer) => s.log?.write(chunk));
    child.stderr?.on("data", (chunk: Buffer) => s.log?.write(chunk));
    let spawnError: unknown;
    child.on("error", (error) => { spawnError = error; });
    child.on("close", (code, signal) => exited(s, child, code, signal, spawnError));
    const upAt = setTimeout(() => {
      if (s.child === child && s.state === "starting") { s.state = "running"; changed(); }
    }, RUNNING_AFTER_MS);
    upAt.unref();
    changed();
  };

  const exited = (s: Supervised, child: ChildProcess | undefined, code: number | null, signal: NodeJS.Signals | null, error: unknown) => {
    if (child !== undefined && s.child !== child) return;
    s.child = undefined;
    // A spawn that failed (no such command) closes with a negative errno: said as its error, no code.
    s.code = error === undefined ? code : null;
    s.signal = signal ?? undefined;
    s.error = error === undefined ? undefined : error instanceof Error ? error.message : String(error);
    const what = s.error ?? (signal ? `signal ${signal}` : `code ${code}`);
    s.log?.write(`--- mesh: exited (${what}) at ${new Date().toISOString()}\n`);
    if (s.stopped !== undefined || stopping) { s.state = "exited"; return; }
    s.inARow = exitsInARow(s.inARow, Date.now() - s.startedAt, resetAfterMs);
    const delay = restartDelay(s.inARow, Math.random(), initialMs, maxMs);
    s.state = "exited";
    s.backoffUntil = Date.now() + delay;
    log(`runner: module ${s.spec.module} exited (${what}); starting it again in ${delay} ms`);
    s.timer = setTimeout(() => { s.restarts += 1; start(s); }, delay);
    changed();
  };

  return {
    apply(declaration) {
      if (stopping) return;
      const wanted = wantedRuns(stateDir, declaration, runtime);
      skipped = wanted.skipped;
      const plan = planRuns(new Map([...running].map(([m, s]) => [m, s.spec])), wanted.specs);
      for (const module of plan.stop) {
        const s = running.get(module)!;
        running.delete(module);
        log(`runner: module ${module} is no longer declared here: stopping it`);
        void stop(s);
      }
      for (const spec of plan.restart) {
        const old = running.get(spec.module)!;
        const next: Supervised = { spec, state: "starting", restarts: old.restarts + 1, inARow: 0, startedAt: Date.now() };
        running.set(spec.module, next);
        log(`runner: module ${spec.module}'s run or environment changed: restarting it`);
        void stop(old).then(() => { if (running.get(spec.module) === next && !stopping) start(next); });
      }
      for (const spec of plan.start) {
        const s: Supervised = { spec, state: "starting", restarts: 0, inARow: 0, startedAt: Date.now() };
        running.set(spec.module, s);
        start(s);
      }
      changed();
    },
    states() {
      const out = [...[...running.values()].map(runStateOf), ...skipped.map((n): ModuleRun => ({ module: n.module, state: n.state, reason: n.reason, restarts: 0 }))];
      return out.sort((a, b) => (a.module < b.module ? -1 : a.module > b.module ? 1 : 0));
    },
    logs(module, lines, maxBytes, from) {
      if (!NAME_PATTERN.test(module)) return null;
      const file = moduleLogFile(stateDir, module);
      return running.has(module) || existsSync(file) ? readModuleLog(file, lines, maxBytes, from) : null;
    },
    async stopAll() {
      stopping = true;
      await Promise.all([...running.values()].map(stop));
    },
  };
}
