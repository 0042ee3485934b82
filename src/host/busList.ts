import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { writeFileDurable } from "../files/index.ts";
import { pollUntil, PollTimeout } from "../bus/retry.ts";

/**
 * The broker holder's half of a push (DESIGN.md section 7, R11): the composed user list goes into
 * the include file of the bus's configuration and the bus reloads it.
 *
 * Field notes this follows (nats-server 2.9.10): `nats-server --signal reload` exits 0 even when the
 * new file is invalid, so the whole configuration is validated with `nats-server -t` first and the
 * reload is confirmed afterwards by the monitoring endpoint's `/varz` `config_load_time` advancing.
 * A reload re-checks every connection's authorization and resets `allow_responses` tracking, so an
 * unchanged list is not rewritten and not reloaded.
 */

/** Where the bus is and how to reload it. */
export type BusReloadOptions = {
  /** The server's name, as a push names it (R60: each server of a cluster is installed and reported). */
  server?: string;
  /** The include file the bus's configuration includes, which receives the user list. */
  includeFile: string;
  /** The bus's configuration file (it includes `includeFile`), validated with `nats-server -t`. */
  configFile: string;
  /** The bus's process id, or the path of its pid file (read at each reload). */
  pid: number | string;
  /** The bus's monitoring endpoint, `http://host:port` (its `/varz` says when it last loaded). */
  monitorUrl: string;
  /** The nats-server binary used for `-t` (default `nats-server` on the PATH). */
  natsServer?: string;
  /** Milliseconds to wait for the reload to show in `/varz` (default 30,000). */
  reloadTimeoutMs?: number;
};

/** Why a user list was not installed; the last good file is back in place. `code` is stable. */
export class UserListRefused extends Error {
  override readonly name = "UserListRefused";
  readonly code: "invalid" | "reload-failed" | "no-monitor" | "no-pid";
  constructor(code: UserListRefused["code"], message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** What installUserList did: nothing (the list is unchanged), or swapped and reloaded. */
export type UserListInstalled = {
  changed: boolean;
  /** The bus's `config_load_time` after the reload, when it reloaded. */
  loadedAt?: string;
  /** Milliseconds from the signal to the reload showing in `/varz`. */
  reloadMs?: number;
};

/** `<includeFile>.last-good`: the newest list the bus loaded, restored when a new one fails. */
export function lastGoodFile(includeFile: string): string {
  return `${includeFile}.last-good`;
}

function readPid(pid: number | string): number {
  if (typeof pid === "number") return pid;
  if (/^\d+$/.test(pid.trim())) return Number(pid.trim());
  let text: string;
  try {
    text = readFileSync(pid, "utf8").trim();
  } catch (error) {
    throw new UserListRefused("no-pid", `cannot read the bus's pid file ${pid}`, { cause: error });
  }
  if (!/^\d+$/.test(text)) throw new UserListRefused("no-pid", `the bus's pid file ${pid} holds no process id`);
  return Number(text);
}

/** The bus's `config_load_time` from `<monitorUrl>/varz`. Throws UserListRefused `no-monitor`. */
export async function configLoadTime(monitorUrl: string): Promise<string> {
  const url = `${monitorUrl.replace(/\/+$/, "")}/varz`;
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(5_000) });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const varz = (await response.json()) as { config_load_time?: unknown };
    if (typeof varz.config_load_time !== "string") throw new Error("no config_load_time in /varz");
    return varz.config_load_time;
  } catch (error) {
    throw new UserListRefused("no-monitor", `cannot read ${url}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
}

/** Runs `nats-server -t -c <config>`; returns null when valid, else the server's first error line. */
export function validateConfig(configFile: string, natsServer = "nats-server"): string | null {
  const run = spawnSync(natsServer, ["-t", "-c", configFile], { encoding: "utf8", timeout: 30_000 });
  if (run.error) return `cannot run ${natsServer} -t: ${run.error.message}`;
  if (run.status === 0) return null;
  const line = `${run.stderr}\n${run.stdout}`.split("\n").map((l) => l.trim()).find((l) => l.length > 0);
  return line ?? `nats-server -t exited with ${run.status}`;
}

/** Copies `from` over `to` durably (R54), keeping `from`'s mode. */
function copyDurable(from: string, to: string): void {
  writeFileDurable(to, readFileSync(from), { mode: statSync(from).mode & 0o777 });
}

function restore(includeFile: string): void {
  const lastGood = lastGoodFile(includeFile);
  if (!existsSync(lastGood)) return;
  copyDurable(lastGood, includeFile);
}

function keepLastGood(includeFile: string): void {
  if (!existsSync(includeFile)) return;
  copyDurable(includeFile, lastGoodFile(includeFile));
}

/**
 * Installs `text` (nats-server include text, composed) as the bus's user list:
 * 1. unchanged from the file in place: nothing is done (no reload);
 * 2. reads `config_load_time` (the bus must be observable before anything is touched);
 * 3. keeps the file in place as `<file>.last-good`, writes the new one beside it and swaps it in
 *    atomically, keeping the old file's mode (0600 for a new file); every one of these writes is
 *    fsynced with its folder before the bus is signalled (R54: writeFileDurable);
 * 4. validates the whole configuration with `nats-server -t`; invalid: restores the last good file;
 * 5. signals the bus to reload (SIGHUP to its pid) and waits, bounded, for `config_load_time` to
 *    advance; it did not: restores the last good file;
 * 6. the new file becomes the last good one.
 * Throws UserListRefused (`invalid`, `reload-failed`, `no-monitor`, `no-pid`) with the last good
 * file back in place; the message names the file and the server's reason (hashes only, never a
 * password: a list holds none, R3).
 */
export async function installUserList(text: string, options: BusReloadOptions): Promise<UserListInstalled> {
  const { includeFile, configFile, monitorUrl } = options;
  if (existsSync(includeFile) && readFileSync(includeFile, "utf8") === text) return { changed: false };
  const before = await configLoadTime(monitorUrl);
  const pid = readPid(options.pid);
  const mode = existsSync(includeFile) ? statSync(includeFile).mode & 0o777 : 0o600;
  keepLastGood(includeFile);
  writeFileDurable(includeFile, text, { mode });
  const invalid = validateConfig(configFile, options.natsServer);
  if (invalid !== null) {
    restore(includeFile);
    throw new UserListRefused("invalid", `the new user list for ${includeFile} is refused by nats-server -t (last good file restored): ${invalid}`);
  }
  const signalled = Date.now();
  try {
    process.kill(pid, "SIGHUP");
  } catch (error) {
    restore(includeFile);
    throw new UserListRefused("no-pid", `cannot signal the bus (pid ${pid}) to reload (last good file restored): ${(error as Error).message}`, { cause: error });
  }
  // The bus reloaded when its monitoring endpoint's config_load_time moves (an unanswered ask: not yet).
  const loadedAt = await pollUntil(async () => {
    const now = await configLoadTime(monitorUrl);
    return now === before ? undefined : now;
  }, { everyMs: 25, timeoutMs: options.reloadTimeoutMs ?? 30_000, what: "the bus reloads its user list" }).catch((error: unknown) => {
    if (error instanceof PollTimeout) return undefined;
    throw error;
  });
  if (loadedAt !== undefined) {
    keepLastGood(includeFile);
    return { changed: true, loadedAt, reloadMs: Date.now() - signalled };
  }
  restore(includeFile);
  throw new UserListRefused(
    "reload-failed",
    `the bus did not reload ${includeFile} within ${options.reloadTimeoutMs ?? 30_000} ms (config_load_time stayed ${before}); last good file restored: see the bus's log`,
  );
}
