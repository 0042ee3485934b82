/**
 * A controller in a process of its own, for the failover bench (failover.ts): it can be killed
 * with SIGKILL, as a crashed controller is. Run as `node --import tsx controllerChild.ts <env
 * file>`: it runs the controller as `mesh up`'s daemon does (runController: a start that fails for
 * a passing bus condition, or a lease lost, stands by again), prints each log line on stdout, and
 * runs until it is killed.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { writeFileSync } from "node:fs";
import type { Environment } from "../../src/config.ts";
import { runController } from "../../src/up/controllerDaemon.ts";
import type { MeshPaths } from "../../installer/genesis.ts";

/** Writes `env` as a controller.env file at `file` (KEY=VALUE lines, as genesis writes it). */
export function writeControllerEnv(file: string, env: Environment): void {
  writeFileSync(file, Object.entries(env).map(([key, value]) => `${key}=${value ?? ""}`).join("\n") + "\n", { mode: 0o600 });
}

/** The mesh paths runController reads: only the controller's environment file. */
export function controllerEnvPaths(file: string): MeshPaths {
  return { controllerEnv: file } as MeshPaths;
}

/** Starts a controller child from the env file `file`; resolves once it logs that it serves commands. Throws when it exits first. */
export function startControllerChild(file: string): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url), file], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    const onData = (chunk: Buffer) => {
      out += chunk.toString("utf8");
      if (/serving commands at/.test(out)) {
        proc.stdout!.off("data", onData);
        proc.stdout!.resume(); // keeps draining its log
        resolve(proc);
      }
    };
    proc.stdout!.on("data", onData);
    proc.on("error", reject);
    proc.on("exit", (code) => reject(new Error(`the controller child exited with ${code} before serving: ${out.trim().split("\n").at(-1) ?? ""}`)));
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  runController(controllerEnvPaths(process.argv[2]!), (text) => { process.stdout.write(`${text}\n`); }).catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  });
}
