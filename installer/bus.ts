import { spawn } from "node:child_process";
import { openSync, closeSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { pinnedCertificateOf, probeCertificate } from "../src/bus/pin.ts";
import { InstallerError } from "./errors.ts";
import { packageFile } from "../src/files/index.ts";

/**
 * Running the bus as a child process (the embedded default): nats-server with the installer's
 * configuration, detached so it outlives `mesh up`, its log in `<dir>/logs/bus.log` and its pid in
 * `<dir>/run/bus.pid`. A real machine runs the same configuration under systemd (systemdUnit).
 */

/** A bus process the installer started. */
export type BusProcess = {
  pid: number;
  /** Asks the bus to reload its configuration and user list (SIGHUP). */
  reload(): void;
  /** Stops the bus (SIGTERM) and resolves when it is gone (SIGKILL after `graceMs`, default 5,000). */
  stop(graceMs?: number): Promise<void>;
};

/** True while a process with `pid` runs: one that exited and waits to be reaped (a zombie) is not. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
  return !exited(pid);
}

/**
 * True when `pid` has exited but is still in the process table, waiting for its parent to reap it
 * (a zombie; Linux, from /proc). A daemon of `mesh up` is reaped by init, and some inits (a
 * container's, a VM's) reap only every few seconds: `mesh down` waited about 2 s per process for
 * processes that had exited at once. Where /proc cannot say, false.
 */
function exited(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2)[0];
    return state === "Z" || state === "X";
  } catch {
    return false;
  }
}

/** Sends SIGTERM to `pid`, waits until it is gone (SIGKILL after `graceMs`). Never throws for a gone process. */
export async function stopPid(pid: number, graceMs = 5_000): Promise<void> {
  if (!isAlive(pid)) return;
  try {
    process.kill(pid, "SIGTERM");
  } catch {
    return;
  }
  const deadline = Date.now() + graceMs;
  while (isAlive(pid)) {
    if (Date.now() > deadline) {
      try { process.kill(pid, "SIGKILL"); } catch { /* gone */ }
      break;
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * Starts `binary -c configFile` detached, its output appended to `logFile` (the file its configuration
 * names as `log_file`, R70: the server writes its log there itself, rotated; its output is what
 * comes before the log is opened, a refused configuration), and waits (up to
 * `timeoutMs`, default 10,000 ms) until it serves TLS on `host:port` with the certificate
 * `fingerprint` (R34). Throws InstallerError (one line, the last line of the bus's log) when it
 * exits or never becomes ready; a bus that never became ready is stopped.
 */
export async function startBus(options: {
  binary: string;
  configFile: string;
  logFile: string;
  host: string;
  port: number;
  fingerprint: string;
  timeoutMs?: number;
  /** Detach from this process (default true): `mesh up` leaves the bus running. */
  detached?: boolean;
}): Promise<BusProcess> {
  mkdirSync(dirname(options.logFile), { recursive: true });
  const out = openSync(options.logFile, "a");
  const child = spawn(options.binary, ["-c", options.configFile], {
    detached: options.detached ?? true,
    stdio: ["ignore", out, out],
  });
  closeSync(out);
  let exited: number | null = null;
  child.on("exit", (code) => { exited = code ?? -1; });
  if (options.detached ?? true) child.unref();
  const pid = child.pid;
  if (pid === undefined) throw new InstallerError(`nats-server could not be started (${options.binary})`);
  const lastLogLine = () => {
    const text = existsSync(options.logFile) ? readFileSync(options.logFile, "utf8") : "";
    return text.trim().split("\n").filter((l) => /\[(ERR|FTL)\]/.test(l)).pop() ?? text.trim().split("\n").pop() ?? "";
  };
  const deadline = Date.now() + (options.timeoutMs ?? 10_000);
  for (;;) {
    if (exited !== null) throw new InstallerError(`the bus exited (${exited}) at start: ${lastLogLine()}`);
    try {
      const presented = await probeCertificate(options.host, options.port, { timeoutMs: 1_000 });
      if (pinnedCertificateOf(presented, options.fingerprint) === undefined) {
        await stopPid(pid);
        throw new InstallerError(
          `the bus at ${options.host}:${options.port} presents certificate ${presented.fingerprint}, not the mesh's ${options.fingerprint}: another server holds the port`,
        );
      }
      break;
    } catch (error) {
      if (error instanceof InstallerError) throw error;
      if (Date.now() > deadline) {
        await stopPid(pid);
        throw new InstallerError(`the bus did not start serving on ${options.host}:${options.port}: ${lastLogLine()}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return {
    pid,
    reload: () => { process.kill(pid, "SIGHUP"); },
    stop: (graceMs?: number) => stopPid(pid, graceMs),
  };
}

/** The `mesh` launcher of this package (bin/mesh.js), what the controller's and host's units run. */
export const MESH_BIN = packageFile("bin", "mesh.js");

/** The command line that runs `mesh <args>` with this Node and this package's launcher. */
export function meshCommand(args: readonly string[]): string {
  return [process.execPath, MESH_BIN, ...args].join(" ");
}

/** A systemd service unit: restart on failure, started after the network (and after `after`). */
function unitText(description: string, service: readonly string[], after: readonly string[] = []): string {
  const wants = ["network-online.target", ...after].join(" ");
  return [
    "[Unit]",
    `Description=${description}`,
    `After=${wants}`,
    `Wants=${wants}`,
    "",
    "[Service]",
    "Type=simple",
    ...service,
    "Restart=on-failure",
    "RestartSec=2",
    "LimitNOFILE=65536",
    "",
    "[Install]",
    "WantedBy=multi-user.target",
    "",
  ].join("\n");
}

/**
 * A systemd unit that runs the bus from `configFile` on a real machine (`--systemd`): restart on
 * failure, reload with SIGHUP (`systemctl reload mesh-bus`; the broker's host agent signals the
 * pid the bus writes to `<dir>/run/bus.pid` itself). Runs as root unless `user` is given (that
 * user must then own the mesh folder: the key files are 0600).
 */
export function systemdUnit(binary: string, configFile: string, user?: string): string {
  return unitText("mesh-controller bus (nats-server with JetStream)", [
    ...(user ? [`User=${user}`] : []),
    `ExecStart=${binary} -c ${configFile}`,
    "ExecReload=/bin/kill -HUP $MAINPID",
  ]);
}

/**
 * The controller's systemd unit (R56): `mesh controller` with the settings genesis wrote to
 * `envFile` (controller.env) as its environment, started after the bus.
 */
export function controllerUnit(envFile: string): string {
  return unitText("mesh-controller (the mesh's control plane)", [
    `EnvironmentFile=${envFile}`,
    `ExecStart=${meshCommand(["controller"])}`,
  ], ["mesh-bus.service"]);
}

/**
 * A host agent's systemd unit (R56): `mesh host` for `node` with its state folder `stateDir`; on
 * the node holding mesh-broker `bus` gives the four `--bus-*` settings (the bus's include file,
 * configuration, pid file and monitoring endpoint), and the unit starts after the bus.
 */
export function hostUnit(node: string, stateDir: string, bus?: { includeFile: string; configFile: string; pid: string | number; monitorUrl: string }): string {
  const args = ["host", "--state", stateDir, "--node", node];
  if (bus) args.push("--bus-include", bus.includeFile, "--bus-config", bus.configFile, "--bus-pid", String(bus.pid), "--bus-monitor", bus.monitorUrl);
  return unitText(`mesh host agent of node ${node}`, [`ExecStart=${meshCommand(args)}`], bus ? ["mesh-bus.service"] : []);
}

/** `<dir>/run/<name>.pid` */
export function pidFile(dir: string, name: string): string {
  return join(dir, "run", `${name}.pid`);
}
