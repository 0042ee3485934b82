import { parseEnvFile } from "../files/envFile.ts";
import type { DeclaredModule } from "../contracts/declaration.ts";
import { SEED_VARIABLE } from "../compose/environment.ts";
import { publicKeyOfSeed } from "../crypto/secrets.ts";

/**
 * The module runner's decisions (R72), pure: what a module's declaration asks the agent to run,
 * what to start, stop and restart when a new declaration is applied, and when an exited module is
 * started again. The shell that spawns is runner.ts.
 */

/** Seconds between SIGTERM and SIGKILL when the manifest names no `run.grace`. */
export const DEFAULT_GRACE_SECONDS = 10;
/** The first pause before a module that exited is started again, in milliseconds. */
export const RESTART_INITIAL_MS = 1_000;
/** The longest pause before a restart (doubled per exit in a row up to this). */
export const RESTART_MAX_MS = 30_000;
/** A module that ran this long before it exited starts its back-off from the first pause again. */
export const RESTART_RESET_AFTER_MS = 60_000;
/** A process that stays up this long after it was spawned is `running` (before: `starting`). */
export const RUNNING_AFTER_MS = 500;
/** The container runtimes looked for on PATH, in this order. */
export const CONTAINER_RUNTIMES = ["podman", "docker"] as const;

/** What the agent runs for one module: argv (no shell) in its folder, with its environment. */
export type RunSpec = {
  module: string;
  /** The manifest's version: a new one restarts the module, as an operator who registered new code expects. */
  version: string;
  /** The program and its arguments: the manifest's command, or the runtime's `run ... <image>`. */
  argv: string[];
  /** The module's folder (its working directory; `env` and `module.log` are there). */
  dir: string;
  /** Milliseconds between SIGTERM and SIGKILL. */
  graceMs: number;
  /** The environment from its `env` file. */
  env: Record<string, string>;
  /** sha256 of the `env` file's text (R73: what the process was started with). */
  envDigest: string;
  /** The nkey public key of the env's seed, when it has one (R73). */
  nkey?: string;
};

/** A module of the declaration the agent does not run, and why (reported, never silent). */
export type NotRun = { module: string; state: "not-run" | "runtime-missing"; reason: string };

/** What one declared module asks of the runner. */
export type RunWish = { kind: "run"; spec: RunSpec } | { kind: "skip"; notRun: NotRun };

/** What the host knows besides the declaration: the module's folder, its env file, a runtime. */
export type RunFacts = {
  dir: string;
  envText: string | undefined;
  envDigest: string;
  /** The container runtime on PATH (podman, docker), or null when neither is. */
  runtime: string | null;
};

/** R73: the nkey public key of the env's seed, or undefined when it holds none a key derives from. */
function nkeyOf(env: Readonly<Record<string, string>>): string | undefined {
  const seed = env[SEED_VARIABLE];
  if (seed === undefined) return undefined;
  try {
    return publicKeyOfSeed(seed);
  } catch {
    return undefined;
  }
}

/**
 * What the agent does for `entry` (R72): run its `run.command` as argv in its folder; run its
 * `run.image` through `facts.runtime` (host network, its env file, its folder mounted read-only
 * at the same path), or report `runtime-missing` when the node has none; run nothing for a
 * module run by the mesh (`run.by`) or with no `run`.
 */
export function runWish(entry: DeclaredModule, facts: RunFacts): RunWish {
  const run = entry.run ?? {};
  const module = entry.module;
  const skip = (state: NotRun["state"], reason: string): RunWish => ({ kind: "skip", notRun: { module, state, reason } });
  if (run.by !== undefined) return skip("not-run", `run by ${String(run.by)} (genesis's units, mesh up), not by the agent`);
  const command = Array.isArray(run.command) && run.command.length > 0 ? run.command : undefined;
  const image = typeof run.image === "string" && run.image.length > 0 ? run.image : undefined;
  if (command === undefined && image === undefined) return skip("not-run", "its manifest names no run.command or run.image");
  const graceSeconds = typeof run.grace === "number" && run.grace >= 0 ? run.grace : DEFAULT_GRACE_SECONDS;
  let argv: string[];
  if (command !== undefined) {
    argv = [...command];
  } else {
    // Records written before the manifest refused it: an image read as a flag is never run.
    if (image!.startsWith("-") || /\s/.test(image!)) return skip("not-run", `run.image ${JSON.stringify(image)} is not an image reference`);
    if (facts.runtime === null) return skip("runtime-missing", `run.image ${image} needs podman or docker on the node's PATH; neither is there`);
    argv = [
      facts.runtime, "run", "--rm", "--init", "--name", `mesh-${module}`, "--network", "host",
      "--env-file", `${facts.dir}/env`, "--volume", `${facts.dir}:${facts.dir}:ro`, "--workdir", facts.dir, image!,
    ];
  }
  const env = facts.envText === undefined ? {} : parseEnvFile(facts.envText);
  // The key is read from the variables the module gets, parsed as the env file is written (R73).
  const nkey = nkeyOf(env);
  const spec: RunSpec = { module, version: entry.version, argv, dir: facts.dir, graceMs: graceSeconds * 1000, env, envDigest: facts.envDigest, ...(nkey === undefined ? {} : { nkey }) };
  return { kind: "run", spec };
}

/**
 * What changed from a running `before` to `after` that restarts it, as the module's log says it
 * (`its version changed (0.1.0 → 0.2.0)`), or undefined when nothing did: its version, its
 * environment (a rotation), its command, its folder or its grace. Pure.
 */
export function specChange(before: RunSpec, after: RunSpec): string | undefined {
  if (before.version !== after.version) return `its version changed (${before.version} → ${after.version})`;
  if (before.envDigest !== after.envDigest) return "its environment changed";
  if (before.argv.length !== after.argv.length || before.argv.some((arg, i) => arg !== after.argv[i])) return "its command changed";
  if (before.dir !== after.dir) return "its folder changed";
  if (before.graceMs !== after.graceMs) return "its grace changed";
  return undefined;
}

/** True when a running `before` must be restarted to become `after` (specChange says what changed). */
export function specChanged(before: RunSpec, after: RunSpec): boolean {
  return specChange(before, after) !== undefined;
}

/** What to do when a new declaration is applied: modules to start, stop, and restart (stop, then start with the new spec). */
export type RunPlan = { start: RunSpec[]; stop: string[]; restart: RunSpec[]; unchanged: string[] };

/**
 * The plan from what runs now (`running`, by module) to what the new declaration wants (`wanted`):
 * a module no longer wanted is stopped, a new one started, one whose spec changed (specChanged:
 * its version, its env after a rotation, its command) restarted; the rest keep running. Sorted by module.
 */
export function planRuns(running: ReadonlyMap<string, RunSpec>, wanted: ReadonlyMap<string, RunSpec>): RunPlan {
  const plan: RunPlan = { start: [], stop: [], restart: [], unchanged: [] };
  for (const module of [...running.keys()].sort()) if (!wanted.has(module)) plan.stop.push(module);
  for (const module of [...wanted.keys()].sort()) {
    const now = running.get(module);
    const next = wanted.get(module)!;
    if (now === undefined) plan.start.push(next);
    else if (specChanged(now, next)) plan.restart.push(next);
    else plan.unchanged.push(module);
  }
  return plan;
}

/**
 * The pause before starting again a module that exited for the `inARow`th time in a row (1: the
 * first): RESTART_INITIAL_MS doubled per exit up to `maxMs`, times a jitter of 0.5 to 1 from
 * `random` (0..1) so that modules that fail together do not restart together.
 */
export function restartDelay(inARow: number, random: number, initialMs = RESTART_INITIAL_MS, maxMs = RESTART_MAX_MS): number {
  const base = Math.min(maxMs, initialMs * 2 ** Math.min(Math.max(inARow, 1) - 1, 20));
  return Math.round(base * (0.5 + Math.min(Math.max(random, 0), 1) / 2));
}

/** Exits in a row after one that ran `ranMs`: reset to 1 when it ran RESTART_RESET_AFTER_MS or longer, else one more. */
export function exitsInARow(previous: number, ranMs: number, resetAfterMs = RESTART_RESET_AFTER_MS): number {
  return ranMs >= resetAfterMs ? 1 : previous + 1;
}

/** The first of `runtimes` that `onPath` finds, or null. */
export function containerRuntime(onPath: (program: string) => boolean, runtimes: readonly string[] = CONTAINER_RUNTIMES): string | null {
  return runtimes.find((program) => onPath(program)) ?? null;
}

/** The last `maxLines` lines of `text`, at most `maxBytes` bytes of them (the newest kept); `truncated` when anything was left off. */
export function tailOf(text: string, maxLines: number, maxBytes: number): { text: string; truncated: boolean } {
  let lines = text.split("\n");
  const endsWithNewline = lines.length > 0 && lines[lines.length - 1] === "";
  if (endsWithNewline) lines.pop();
  let truncated = lines.length > maxLines;
  lines = lines.slice(Math.max(0, lines.length - maxLines));
  let out = lines.join("\n") + (endsWithNewline && lines.length > 0 ? "\n" : "");
  if (Buffer.byteLength(out) > maxBytes) {
    out = Buffer.from(out).subarray(Buffer.byteLength(out) - maxBytes).toString("utf8");
    truncated = true;
  }
  return { text: out, truncated };
}
