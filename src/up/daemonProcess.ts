/**
 * The processes `mesh up` leaves running: `daemonMain.ts controller <dir>`, `... host <dir>` and
 * `... supervisor <dir>`. Each reads what it needs from the mesh folder (the controller its
 * controller.env through parseControllerConfig, R35; the host its state folder and the bus's include
 * file), logs one line per event to stdout (the caller sends it to `<dir>/logs`), says why it stops
 * in its exit record (R76), and stops cleanly on SIGTERM or SIGINT. Each role's code is loaded when
 * that role runs (issue 29): the controller, started beside the host while `mesh up` waits for its
 * answer, parses no host agent and no certificate code.
 */
import { join, resolve } from "node:path";
import { processLog } from "../bootstrap/log.ts";
import { exitRecordFile, recordExit } from "./exitRecord.ts";
import { CONTROLLER_ENV_FILE } from "../../installer/controllerEnv.ts";
import type { Running } from "./controllerDaemon.ts";

/** One line of what `error` says (an Error's first line). */
function firstLine(error: unknown): string {
  return error instanceof Error ? error.message.split("\n")[0]! : String(error);
}

/** The roles a daemon of `mesh up` runs. */
type Role = "controller" | "host" | "supervisor";

/** Starts `role` for the mesh folder `dir` in this process, its module loaded now. Throws what its start throws. */
async function startRole(role: Role, dir: string, name: string, log: (line: string) => void, env: Readonly<Record<string, string | undefined>>): Promise<Running> {
  if (role === "controller") {
    const { runController } = await import("./controllerDaemon.ts");
    return runController({ controllerEnv: join(dir, CONTROLLER_ENV_FILE) }, log, { name });
  }
  if (role === "host") {
    const [{ runHost }, { meshPaths }] = await Promise.all([import("./daemon.ts"), import("../../installer/genesis.ts")]);
    return runHost(meshPaths(dir), log);
  }
  const { supervise } = await import("./supervisor.ts");
  const abort = new AbortController();
  const done = supervise(dir, log, { env, signal: abort.signal });
  return { stop: async () => { abort.abort(); await done; } };
}

/**
 * Runs `controller|host|supervisor <dir> [<name>]` until SIGTERM/SIGINT (src/up/daemonMain.ts
 * calls it with the process's environment, which the supervisor passes on to what it starts).
 * R76: its log never ends it (processLog), and why it stops (it could not start, an error nothing
 * caught, a signal) is written to its exit record, which needs no new space (src/up/exitRecord.ts).
 */
export async function main(argv: readonly string[], env: Readonly<Record<string, string | undefined>> = {}): Promise<void> {
  const [role, given, named] = argv;
  const log = processLog();
  if ((role !== "controller" && role !== "host" && role !== "supervisor") || !given) {
    log("usage: daemonMain.ts controller|host|supervisor <mesh dir> [<process name>]");
    process.exitCode = 2;
    return;
  }
  const name = named ?? role;
  const dir = resolve(given);
  const stopping = (reason: string, code: number) => {
    log(reason);
    recordExit(exitRecordFile(dir, name), reason);
    process.exitCode = code;
  };
  for (const event of ["uncaughtException", "unhandledRejection"] as const) {
    process.on(event, (error: unknown) => {
      if (error instanceof Error && error.stack) log(`${name}: ${error.stack}`);
      stopping(`${name}: stopped by an error nothing caught: ${firstLine(error)}`, 1);
      process.exit(1);
    });
  }
  let running: Running;
  try {
    running = await startRole(role, dir, name, log, env);
  } catch (error) {
    stopping(`${name}: cannot start: ${firstLine(error)}`, 1);
    return;
  }
  log(`${name}: running (pid ${process.pid})`);
  const stop = (signal: string) => {
    void running.stop().finally(() => { stopping(`${name}: stopped on ${signal}`, 0); process.exit(0); });
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
}
