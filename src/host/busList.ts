import { spawn } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { setPriority } from "node:os";
import { linkDurable, writeFileDurable } from "../files/index.ts";
import { pollUntil, PollTimeout } from "../bus/retry.ts";
import type { ServerListOutcome } from "../contracts/report.ts";
import { firstLine, type ListInstallOutcome } from "./plan.ts";
import { busNamesOfList } from "../compose/userList.ts";
import { renewBusCertificate } from "./busCertificate.ts";

/**
 * The broker holder's half of a push (DESIGN.md section 7, R11): the composed user list goes into
 * the include file of the bus's configuration and the bus reloads it.
 *
 * Field notes this follows (nats-server 2.9.10): `nats-server --signal reload` exits 0 even when the
 * new file is invalid, so a reload is confirmed by the monitoring endpoint's `/varz`
 * `config_load_time` advancing. A reload that fails (a file that does not parse, an option that
 * cannot change while running) changes nothing: the server checks the whole new configuration
 * before it applies any of it (server/reload.go: Reload parses, ReloadOptions diffs, then applies),
 * logs `Failed to reload server configuration: <why>`, keeps the configuration it runs, and
 * `config_load_time` does not move. So the bus itself is the validator on the way: `nats-server
 * -t` is not run before the signal (a process spawned that parses the whole list again: 0.1 to
 * 0.3 s at 1,000 users here, as long as the reload itself), only when a reload is late, at idle
 * priority, to say why it does not show and to end the wait early when the list does not parse.
 * A reload re-checks every connected client against the new list and resets `allow_responses`
 * tracking, so an unchanged list is not rewritten and not reloaded.
 */

/**
 * Milliseconds after the signal before `nats-server -t` is asked why the reload has not shown. A
 * reload of a valid list is usually done by then (0.1 to 0.4 s at 1,000 connected clients, 1 to
 * 2 s at 10,000, on this 2-core machine under load) and never pays for the check (a process
 * spawned from this one, the whole list parsed again, beside the reload); a list the bus refused is
 * named this much later, once: its failure is rare, its diagnosis need not be fast.
 */
const VALIDATE_AFTER_MS = 2_000;

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

/** Milliseconds a read of `/varz` waits for the monitoring endpoint's answer. */
const VARZ_TIMEOUT_MS = 5_000;

/**
 * The bus's `config_load_time` from `<monitorUrl>/varz`. `server`: the server's name on a cluster
 * (R60), said in the error. Throws UserListRefused `no-monitor` in an operator's words
 * (monitorProblem), never the probe's raw "fetch failed".
 */
export async function configLoadTime(monitorUrl: string, server?: string): Promise<string> {
  const url = `${monitorUrl.replace(/\/+$/, "")}/varz`;
  let answered = false;
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(VARZ_TIMEOUT_MS) });
    answered = true;
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const varz = (await response.json()) as { config_load_time?: unknown };
    if (typeof varz.config_load_time !== "string") throw new Error("no config_load_time in its answer");
    return varz.config_load_time;
  } catch (error) {
    throw new UserListRefused("no-monitor", monitorProblem(url, error, answered, server), { cause: error });
  }
}

/**
 * Why the monitoring endpoint `url` gave no `config_load_time`, naming `server` (else "the bus"):
 * when it did not answer at all (connection refused or reset, no answer in time) the server looks
 * stopped, and the words say so with the probe's reason (`connection refused`, not fetch's own
 * "fetch failed"); when it answered, what was wrong with the answer. Pure.
 */
export function monitorProblem(url: string, error: unknown, answered: boolean, server?: string): string {
  const who = server === undefined ? "the bus" : `server ${server}`;
  const why = error instanceof Error ? error.message : String(error);
  if (answered) return `the monitoring endpoint of ${who} (${url}) gave no config_load_time: ${why}`;
  const cause = error instanceof Error ? (error.cause as { code?: unknown; message?: unknown } | undefined) : undefined;
  const code = typeof cause?.code === "string" ? cause.code : undefined;
  const reason = error instanceof Error && error.name === "TimeoutError" ? `no answer within ${VARZ_TIMEOUT_MS} ms`
    : code === "ECONNREFUSED" ? "connection refused"
      : code === "ECONNRESET" ? "connection reset"
        : code ?? (typeof cause?.message === "string" ? cause.message : why);
  return `the monitoring endpoint of ${who} (${url}) did not answer (${reason}): ${server === undefined ? "the bus" : "the server"} looks stopped`;
}

/** What `nats-server -t` says of a configuration: valid, invalid (with its first line), or nothing (it could not run, or was stopped). */
export type ConfigVerdict = { valid: true } | { valid: false; reason: string } | { valid: undefined; reason: string };

/**
 * Runs `nats-server -t -c <configFile>` (the whole configuration parsed, its includes with it) and
 * resolves with its verdict; never rejects. `natsServer`: the binary (default `nats-server` on the
 * PATH); `idle`: at the lowest CPU priority (it runs beside a reload, which must not wait for it);
 * `signal`: stops it (verdict `undefined`). Bounded at 30 s.
 */
export function validateConfig(configFile: string, options: { natsServer?: string; idle?: boolean; signal?: AbortSignal } = {}): Promise<ConfigVerdict> {
  const natsServer = options.natsServer ?? "nats-server";
  return new Promise((resolve) => {
    let said = "";
    // The bound is an unref'd timer (spawn's own `timeout` keeps the process alive when the binary is missing).
    const bound = AbortSignal.timeout(30_000);
    const signal = options.signal ? AbortSignal.any([options.signal, bound]) : bound;
    const child = spawn(natsServer, ["-t", "-c", configFile], { stdio: ["ignore", "pipe", "pipe"], signal });
    if (options.idle && child.pid !== undefined) {
      try {
        setPriority(child.pid, 19);
      } catch {
        // Not allowed here: it runs at the normal priority.
      }
    }
    child.stdout.on("data", (chunk: Buffer) => { said += chunk.toString("utf8"); });
    child.stderr.on("data", (chunk: Buffer) => { said += chunk.toString("utf8"); });
    child.on("error", (error) => resolve({ valid: undefined, reason: `cannot run ${natsServer} -t: ${error.message}` }));
    child.on("close", (code) => {
      if (code === 0) return resolve({ valid: true });
      if (code === null) return resolve({ valid: undefined, reason: `${natsServer} -t was stopped` });
      const line = said.split("\n").map((l) => l.trim()).find((l) => l.length > 0);
      resolve({ valid: false, reason: line ?? `${natsServer} -t exited with ${code}` });
    });
  });
}

/** True when `a` and `b` name one file (the same inode: `b` is a hard link of `a`). */
function sameFile(a: string, b: string): boolean {
  if (!existsSync(a) || !existsSync(b)) return false;
  const [x, y] = [statSync(a), statSync(b)];
  return x.ino === y.ino && x.dev === y.dev;
}

/**
 * `to` becomes the file `from` (already durable) under a second name (linkDurable: no byte copied,
 * R54); where the file system has no hard links, a durable copy keeping `from`'s mode. Nothing to
 * do when they already are one file.
 */
function keepAs(from: string, to: string): void {
  if (sameFile(from, to)) return;
  try {
    linkDurable(from, to);
  } catch {
    writeFileDurable(to, readFileSync(from), { mode: statSync(from).mode & 0o777 });
  }
}

/** The last good list back in the include file's place (nothing when there is none). */
function restore(includeFile: string): void {
  const lastGood = lastGoodFile(includeFile);
  if (existsSync(lastGood)) keepAs(lastGood, includeFile);
}

function keepLastGood(includeFile: string): void {
  if (existsSync(includeFile)) keepAs(includeFile, lastGoodFile(includeFile));
}

/**
 * Installs `text` (nats-server include text, composed) as the bus's user list:
 * 1. unchanged from the file in place (byte for byte): nothing is done (no reload);
 * 2. reads `config_load_time` (the bus must be observable before anything is touched);
 * 3. keeps the file in place as `<file>.last-good` (a second name of the same file, unless it is
 *    one already), writes the new one beside it and swaps it in atomically, keeping the old file's
 *    mode (0600 for a new file), fsynced with its folder before the bus is signalled (R54);
 * 4. signals the bus to reload (SIGHUP to its pid) and waits, bounded by `reloadTimeoutMs`, for
 *    `config_load_time` to advance, polling every 10 ms; a reload not shown after
 *    VALIDATE_AFTER_MS has `nats-server -t` check the configuration at idle priority
 *    (validateConfig), and its `invalid` ends the wait: the bus's own reload of that file fails the
 *    same way and leaves its running list live (module comment);
 * 5. invalid, or not reloaded in time: the last good file is put back, and UserListRefused thrown;
 * 6. reloaded: the new file becomes the last good one.
 * Before the signal, a list naming the hosts the bus's certificate must carry (busNamesOfList) has
 * the certificate renewed from the mesh's CA when it names others (renewBusCertificate, R71): the
 * same reload presents it. A renewed certificate is kept when the list is refused: it is issued by
 * the same CA for the hosts the records name, so every client still verifies it.
 * Throws UserListRefused (`invalid`, `reload-failed`, `no-monitor`, `no-pid`) with the last good
 * file back in place and the bus still running it; the message names the file and the server's
 * reason (public keys only, never a secret: a list holds none, R3, R63). Precondition (as before):
 * `nats-server -t` sees the configuration as the bus does (the same binary, files it can read).
 */
export async function installUserList(text: string, options: BusReloadOptions): Promise<UserListInstalled> {
  const { includeFile, configFile, monitorUrl } = options;
  const bytes = Buffer.from(text, "utf8");
  if (existsSync(includeFile) && readFileSync(includeFile).equals(bytes)) return { changed: false };
  const before = await configLoadTime(monitorUrl, options.server);
  const pid = readPid(options.pid);
  const names = busNamesOfList(text);
  if (names !== undefined) await renewBusCertificate(configFile, names);
  const mode = existsSync(includeFile) ? statSync(includeFile).mode & 0o777 : 0o600;
  keepLastGood(includeFile);
  writeFileDurable(includeFile, bytes, { mode });
  const signalled = Date.now();
  try {
    process.kill(pid, "SIGHUP");
  } catch (error) {
    restore(includeFile);
    throw new UserListRefused("no-pid", `cannot signal the bus (pid ${pid}) to reload (last good file restored): ${(error as Error).message}`, { cause: error });
  }
  const timeoutMs = options.reloadTimeoutMs ?? 30_000;
  let checking: AbortController | undefined;
  let verdict: ConfigVerdict | undefined;
  // The bus reloaded when config_load_time moves (an unanswered ask: not yet). A reload not shown
  // after VALIDATE_AFTER_MS has `nats-server -t` look at the file beside it; its `invalid` ends the wait.
  const outcome = await pollUntil(async (): Promise<{ loadedAt: string } | { invalid: string } | undefined> => {
    const now = await configLoadTime(monitorUrl, options.server);
    if (now !== before) return { loadedAt: now };
    if (verdict?.valid === false) return { invalid: verdict.reason };
    if (checking === undefined && Date.now() - signalled >= VALIDATE_AFTER_MS) {
      checking = new AbortController();
      void validateConfig(configFile, { ...(options.natsServer ? { natsServer: options.natsServer } : {}), idle: true, signal: checking.signal }).then((said) => { verdict = said; });
    }
    return undefined;
  }, { everyMs: 10, timeoutMs, what: "the bus reloads its user list" }).catch((error: unknown) => {
    if (error instanceof PollTimeout) return undefined;
    throw error;
  }).finally(() => checking?.abort());
  if (outcome !== undefined && "loadedAt" in outcome) {
    keepLastGood(includeFile);
    return { changed: true, loadedAt: outcome.loadedAt, reloadMs: Date.now() - signalled };
  }
  restore(includeFile);
  if (outcome !== undefined) {
    throw new UserListRefused("invalid", `the new user list for ${includeFile} is refused: nats-server -t says ${outcome.invalid}; the bus kept running its list (config_load_time stayed ${before}) and the last good file is back in place`);
  }
  const checked = verdict === undefined ? "" : verdict.valid ? " (nats-server -t finds it valid)" : ` (${verdict.reason})`;
  throw new UserListRefused(
    "reload-failed",
    `the bus did not reload ${includeFile} within ${timeoutMs} ms (config_load_time stayed ${before})${checked}; last good file restored: see the bus's log`,
  );
}

/**
 * Installs `text` on every server of `bus` in turn (R60). One server (not an array): its refusal
 * is thrown as it is. A cluster: each server's outcome is in `servers`, and only a list no server
 * took is thrown; a server that missed it keeps its old file (and `log` hears why), so the next
 * push, which sends the list again to a holder whose last report names a missed server, repairs it.
 */
export async function installOnEveryServer(
  text: string,
  bus: BusReloadOptions | readonly BusReloadOptions[],
  log: (line: string) => void,
): Promise<{ installed: ListInstallOutcome[]; servers?: ServerListOutcome[] }> {
  if (!Array.isArray(bus)) {
    const done = await installUserList(text, bus as BusReloadOptions);
    return { installed: [{ ok: true, changed: done.changed, ...(done.reloadMs === undefined ? {} : { reloadMs: done.reloadMs }) }] };
  }
  const installed: ListInstallOutcome[] = [];
  for (const [index, target] of (bus as readonly BusReloadOptions[]).entries()) {
    const server = target.server ?? `server ${index + 1}`;
    try {
      const done = await installUserList(text, target);
      installed.push({ server, ok: true, changed: done.changed, ...(done.reloadMs === undefined ? {} : { reloadMs: done.reloadMs }) });
    } catch (error) {
      const why = firstLine(error);
      log(`server ${server} missed the user list: ${why}`);
      installed.push({ server, ok: false, error: why });
    }
  }
  // The report carries each server's outcome without the reload's time.
  const servers: ServerListOutcome[] = installed.map(({ reloadMs: _reloadMs, server, ...outcome }) => ({ server: server!, ...outcome }));
  if (!installed.some((o) => o.ok)) throw new Error(`no server took the user list: ${servers.map((s) => `${s.server}: ${s.error}`).join("; ")}`);
  return { installed, servers };
}
