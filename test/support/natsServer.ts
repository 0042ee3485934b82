import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync, readFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { allowPlainBusDialsInThisTestProcess } from "../../src/bus/tlsOnly.ts";

// Test servers listen without TLS unless a test asks for it: a process that loads this harness may
// dial them (R67's one test seam, src/bus/tlsOnly.ts; the product refuses every nats:// address).
allowPlainBusDialsInThisTestProcess();

/**
 * A real nats-server for tests (DESIGN.md section 8): JetStream on, client and monitoring ports
 * chosen by the server and read back, a temporary store folder, stopped by `stop()`, which a test
 * calls from `after` (never its last line). Throws a clear error when nats-server is missing.
 */
export type NatsServer = {
  /** `nats://127.0.0.1:<port>` or, with TLS, `tls://127.0.0.1:<port>`. */
  url: string;
  port: number;
  monitorPort: number;
  /** The temporary folder holding the store, the configuration and the log. */
  dir: string;
  configFile: string;
  /** The server's log so far (it never contains client passwords). */
  log(): string;
  /** Asks the server to reload its configuration (SIGHUP). */
  reload(): void;
  stop(): Promise<void>;
  /** Kills the server at once (SIGKILL, a crash: no goodbye to the cluster) and keeps its folder. */
  kill(): Promise<void>;
};

export type NatsServerOptions = {
  /** Extra configuration text appended after the defaults (authorization, tls, include, ...). */
  config?: string;
  /** Files written into the server's folder before it starts, name → content. */
  files?: Record<string, string>;
  /** Reuse this folder (a restart over the same store) instead of a new temporary one. */
  dir?: string;
  /** Listen on this client port (a restart on the same address) instead of one the server picks. */
  port?: number;
  /** Milliseconds to wait for the server to be ready (default 10,000; a restart under a storm of reconnects takes longer). */
  readyTimeoutMs?: number;
};

/** The nats-server binary, or a thrown error that says how to install it. */
export function natsServerBinary(): string {
  const found = spawnSync("sh", ["-c", "command -v nats-server"], { encoding: "utf8" });
  const path = found.stdout.trim();
  if (found.status !== 0 || !path) {
    throw new Error("nats-server is not installed: run `apt-get install -y nats-server` (Debian's package, v2.9.10) and try again");
  }
  return path;
}

/** Starts a nats-server with JetStream and waits until it accepts clients. */
export async function startNatsServer(options: NatsServerOptions = {}): Promise<NatsServer> {
  const binary = natsServerBinary();
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), "mesh-nats-"));
  for (const [name, content] of Object.entries(options.files ?? {})) writeFileSync(join(dir, name), content);
  const configFile = join(dir, "server.conf");
  const portsDir = join(dir, "ports");
  const logFile = join(dir, "server.log");
  writeFileSync(
    configFile,
    [
      `listen: "127.0.0.1:${options.port ?? -1}"`,
      `http: "127.0.0.1:-1"`,
      `ports_file_dir: "${portsDir}"`,
      `jetstream { store_dir: "${join(dir, "store")}" }`,
      options.config ?? "",
    ].join("\n"),
  );
  rmSync(portsDir, { recursive: true, force: true });
  mkdirSync(portsDir);
  const child: ChildProcess = spawn(binary, ["-c", configFile, "-l", logFile], { stdio: "ignore" });
  let exited: number | null = null;
  child.on("exit", (code) => { exited = code ?? -1; });
  const log = () => (existsSync(logFile) ? readFileSync(logFile, "utf8") : "");
  const ports = await waitFor(
    () => {
      if (exited !== null) throw new Error(`nats-server exited with ${exited} before it was ready:\n${log().slice(-2000)}`);
      const file = join(portsDir, `nats-server_${child.pid}.ports`);
      if (!existsSync(file)) return undefined;
      const text = readFileSync(file, "utf8");
      if (!text.trim()) return undefined;
      return JSON.parse(text) as { nats: string[]; monitoring: string[] };
    },
    { timeoutMs: options.readyTimeoutMs ?? 10_000, name: "nats-server ports file" },
  ).catch((error: unknown) => {
    // A server that never became ready must not outlive the test that started it.
    child.kill("SIGKILL");
    throw error;
  });
  const client = new URL(ports.nats[0]!);
  const monitor = new URL(ports.monitoring[0]!);
  const port = Number(client.port);
  return {
    url: `${client.protocol}//127.0.0.1:${port}`,
    port,
    monitorPort: Number(monitor.port),
    dir,
    configFile,
    log,
    reload: () => { child.kill("SIGHUP"); },
    stop: async () => {
      if (exited === null) {
        const done = new Promise<void>((resolve) => child.once("exit", () => resolve()));
        child.kill("SIGTERM");
        await done;
      }
      if (!options.dir) rmSync(dir, { recursive: true, force: true });
    },
    kill: async () => {
      if (exited !== null) return;
      const done = new Promise<void>((resolve) => child.once("exit", () => resolve()));
      child.kill("SIGKILL");
      await done;
    },
  };
}

/**
 * Polls `condition` every `intervalMs` until it returns a value other than undefined/false, and
 * returns it. Throws `<name> did not happen within <timeoutMs> ms` otherwise; a throw from the
 * condition ends the wait at once.
 */
export async function waitFor<T>(
  condition: () => T | undefined | false | Promise<T | undefined | false>,
  { timeoutMs = 5_000, name, intervalMs = 20 }: { timeoutMs?: number; name: string; intervalMs?: number },
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value !== undefined && value !== false) return value as T;
    if (Date.now() > deadline) throw new Error(`${name} did not happen within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

let counter = 0;
/** A name unique in this process, for streams and consumers no two tests share (section 8). */
export function uniqueName(prefix: string): string {
  counter += 1;
  return `${prefix}_${process.pid}_${counter}`;
}

/**
 * Runs `body`, failing after `ms` with `explain()` (a test's recent log lines, say) when it has not
 * settled by then: a test stuck on a bus that never answers fails naming where it was, instead of
 * holding its file until the runner's timeout, which names nothing.
 */
export async function within<T>(ms: number, explain: () => string, body: () => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`still running after ${ms} ms:\n${explain()}`)), ms);
  });
  try {
    return await Promise.race([body(), late]);
  } finally {
    clearTimeout(timer);
  }
}
