import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { accessSync, constants, existsSync, readFileSync } from "node:fs";
import { delimiter, join, resolve } from "node:path";
import type { Declaration } from "../contracts/declaration.ts";
import type { ModuleRun } from "../contracts/report.ts";
import { NAME_PATTERN } from "../names.ts";
import { packageFile } from "../files/packageFiles.ts";
import { forgetModulePid, rememberModulePid, stopLeftovers } from "./modulePids.ts";
import { isLogFile, moduleLogFile, openModuleLog, readModuleLog, type LogTail, type ModuleLog } from "./moduleLog.ts";
import {
  containerRuntime, exitsInARow, planRuns, restartDelay, runWish, specChange, RESTART_INITIAL_MS, RESTART_MAX_MS, RESTART_RESET_AFTER_MS, RUNNING_AFTER_MS,
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

/** Stops `s` for good: SIGTERM to its process group, SIGKILL after its grace; its log says `why`. */
function stop(s: Supervised, why: string): Promise<void> {
  if (s.stopped) return s.stopped;
  if (s.timer) clearTimeout(s.timer);
  s.timer = undefined;
  const child = s.child;
  s.stopped = new Promise<void>((done) => {
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) { s.log?.close(); done(); return; }
    s.state = "stopping";
    s.log?.write(`--- mesh: stopping it (${why}): SIGTERM, SIGKILL after ${s.spec.graceMs / 1000} s, at ${new Date().toISOString()}\n`);
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
  return new ModuleRunner(options);
}

/**
 * The runner's shell (Runner): the supervised modules by name, the declared ones not run with why,
 * and whether it is stopping; starts each module's process and starts it again when it exits.
 */
class ModuleRunner implements Runner {
  private readonly stateDir: string;
  private readonly log: (line: string) => void;
  private readonly restart: { initialMs: number; maxMs: number; resetAfterMs: number };
  private readonly baseEnv: Record<string, string>;
  /** podman or docker when on PATH, for modules that run an image. */
  private readonly runtime: string | null;
  private readonly running = new Map<string, Supervised>();
  private skipped: NotRun[] = [];
  private stopping = false;
  /** Modules a previous agent left running (modulePids.ts), until each is gone: started after. */
  private readonly leftovers: Map<string, Promise<void>>;

  constructor(private readonly options: RunnerOptions) {
    this.stateDir = options.stateDir;
    this.log = options.log;
    this.restart = {
      initialMs: options.restart?.initialMs ?? RESTART_INITIAL_MS,
      maxMs: options.restart?.maxMs ?? RESTART_MAX_MS,
      resetAfterMs: options.restart?.resetAfterMs ?? RESTART_RESET_AFTER_MS,
    };
    this.leftovers = stopLeftovers(this.stateDir, this.log);
    this.baseEnv = options.baseEnv ?? agentBaseEnv();
    this.runtime = containerRuntime(options.onPath ?? onPathOf(this.baseEnv.PATH));
  }

  apply(declaration: Declaration): void {
    if (this.stopping) return;
    const { running, log } = this;
    const wanted = wantedRuns(this.stateDir, declaration, this.runtime);
    this.skipped = wanted.skipped;
    const plan = planRuns(new Map([...running].map(([m, s]) => [m, s.spec])), wanted.specs);
    for (const module of plan.stop) {
      const s = running.get(module)!;
      running.delete(module);
      log(`runner: module ${module} is no longer declared here: stopping it`);
      void stop(s, "no longer declared on this node");
    }
    for (const spec of plan.restart) {
      const old = running.get(spec.module)!;
      const next: Supervised = { spec, state: "starting", restarts: old.restarts + 1, inARow: 0, startedAt: Date.now() };
      running.set(spec.module, next);
      const why = specChange(old.spec, spec) ?? "its run changed";
      log(`runner: module ${spec.module}: ${why}: restarting it`);
      void stop(old, `${why}: it starts again`).then(() => { if (running.get(spec.module) === next && !this.stopping) this.start(next); });
    }
    for (const spec of plan.start) {
      const s: Supervised = { spec, state: "starting", restarts: 0, inARow: 0, startedAt: Date.now() };
      running.set(spec.module, s);
      this.start(s);
    }
    this.changed();
  }

  states(): ModuleRun[] {
    const out = [...[...this.running.values()].map(runStateOf), ...this.skipped.map((n): ModuleRun => ({ module: n.module, state: n.state, reason: n.reason, restarts: 0 }))];
    return out.sort((a, b) => (a.module < b.module ? -1 : a.module > b.module ? 1 : 0));
  }

  logs(module: string, lines: number, maxBytes?: number, from?: number): LogTail | null {
    if (!NAME_PATTERN.test(module)) return null;
    const file = moduleLogFile(this.stateDir, module);
    return this.running.has(module) || isLogFile(file) ? readModuleLog(file, lines, maxBytes, from) : null;
  }

  async stopAll(): Promise<void> {
    this.stopping = true;
    await Promise.all([...this.running.values()].map((s) => stop(s, "the agent is stopping")));
  }

  /** Tells the agent a run state changed, unless the runner is stopping. */
  private changed(): void {
    if (!this.stopping) this.options.onChange();
  }

  /** Starts `s`'s process in its own group, its output to its log; `running` once it stayed up RUNNING_AFTER_MS. */
  private start(s: Supervised): void {
    const leftover = this.leftovers.get(s.spec.module);
    if (leftover !== undefined) {
      // Never two of one module: the one a killed agent left runs until it is gone.
      this.leftovers.delete(s.spec.module);
      void leftover.then(() => { if (this.running.get(s.spec.module) === s && !this.stopping && s.stopped === undefined) this.start(s); });
      return;
    }
    s.timer = undefined;
    s.backoffUntil = undefined;
    s.state = "starting";
    s.startedAt = Date.now();
    s.log ??= openModuleLog(moduleLogFile(this.stateDir, s.spec.module));
    s.log.write(`--- mesh: starting ${s.spec.argv.join(" ")} (start ${s.restarts + 1}) at ${new Date().toISOString()}\n`);
    let child: ChildProcess;
    try {
      child = spawn(s.spec.argv[0]!, s.spec.argv.slice(1), {
        cwd: s.spec.dir, env: { ...this.baseEnv, ...s.spec.env }, stdio: ["ignore", "pipe", "pipe"], detached: true,
      });
    } catch (error) {
      this.exited(s, undefined, null, null, error);
      return;
    }
    s.child = child;
    if (child.pid !== undefined) rememberModulePid(this.stateDir, s.spec.module, child.pid, s.spec.graceMs);
    child.stdout?.on("data", (chunk: Buffer) => s.log?.write(chunk));
    child.stderr?.on("data", (chunk: Buffer) => s.log?.write(chunk));
    let spawnError: unknown;
    child.on("error", (error) => { spawnError = error; });
    child.on("close", (code, signal) => this.exited(s, child, code, signal, spawnError));
    const upAt = setTimeout(() => {
      if (s.child === child && s.state === "starting") { s.state = "running"; this.changed(); }
    }, RUNNING_AFTER_MS);
    upAt.unref();
    this.changed();
  }

  /** `s`'s process (`child`, or a spawn that threw) ended: said in its log, and started again after restartDelay unless stopping. */
  private exited(s: Supervised, child: ChildProcess | undefined, code: number | null, signal: NodeJS.Signals | null, error: unknown): void {
    if (child !== undefined && s.child !== child) return;
    if (child?.pid !== undefined) forgetModulePid(this.stateDir, s.spec.module, child.pid);
    s.child = undefined;
    // A spawn that failed (no such command) closes with a negative errno: said as its error, no code.
    s.code = error === undefined ? code : null;
    s.signal = signal ?? undefined;
    s.error = error === undefined ? undefined : error instanceof Error ? error.message : String(error);
    const what = s.error ?? (signal ? `signal ${signal}` : `code ${code}`);
    s.log?.write(`--- mesh: exited (${what}) at ${new Date().toISOString()}\n`);
    if (s.stopped !== undefined || this.stopping) { s.state = "exited"; return; }
    const { initialMs, maxMs, resetAfterMs } = this.restart;
    s.inARow = exitsInARow(s.inARow, Date.now() - s.startedAt, resetAfterMs);
    const delay = restartDelay(s.inARow, Math.random(), initialMs, maxMs);
    s.state = "exited";
    s.backoffUntil = Date.now() + delay;
    this.log(`runner: module ${s.spec.module} exited (${what}); starting it again in ${delay} ms`);
    s.timer = setTimeout(() => { s.restarts += 1; this.start(s); }, delay);
    this.changed();
  }
}
