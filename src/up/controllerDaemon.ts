/**
 * The controller of a mesh folder run in this process (`mesh up`'s controller daemon, its
 * in-process launcher, the benches). Apart from src/up/daemon.ts so that the controller's daemon
 * loads no host agent and no certificate code before it serves (issue 29): it reads controller.env
 * through installer/controllerEnv.ts, not genesis.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { parseControllerConfig } from "../config.ts";
import { startController, type Controller } from "../bootstrap/main.ts";
import { START_AGAIN_PAUSE_MS, startsAgainAfter } from "../bootstrap/startBound.ts";
import { readEnvFile } from "../../installer/controllerEnv.ts";
import type { MeshPaths } from "../../installer/genesis.ts";

/** A part of the mesh running in this process. */
export type Running = { stop(): Promise<void> };

/**
 * Starts the controller of the mesh in `paths` in this process: its configuration is the mesh's
 * controller.env, parsed once (R35). Throws ConfigError (one line) for bad configuration.
 */
export async function runController(paths: Pick<MeshPaths, "controllerEnv">, log: (line: string) => void, options: { name?: string; signal?: AbortSignal } = {}): Promise<Running> {
  const config = parseControllerConfig(readEnvFile(paths.controllerEnv));
  const name = options.name ?? "controller";
  let stopped = false;
  let current: Controller | undefined;
  let abort = new AbortController();
  let restarting: Promise<void> = Promise.resolve();
  // R61: a controller that lost the lease (it could not renew it in time) stops serving and stands
  // by again, so the mesh keeps a standby.
  const launch = (signal?: AbortSignal): Promise<Controller> => startController(config, {
    log: { info: (line) => log(`${name}: ${line}`), error: (line) => log(`${name}: error: ${line}`) },
    ...(signal ? { signal } : {}),
    onLeaseLost: () => {
      if (stopped) return;
      log(`${name}: standing by again (R61)`);
      const lost = current;
      current = undefined;
      abort = new AbortController();
      const again = abort.signal;
      restarting = (async () => {
        await lost?.stop().catch(() => undefined);
        if (stopped) return;
        current = await launchServing(again).catch(() => undefined);
      })();
    },
  });
  /**
   * Launches until a start serves: one that stalled holding the lease, or that a passing bus
   * condition failed (startsAgainAfter), gave the lease up and stands by again (R61).
   */
  const launchServing = async (signal?: AbortSignal): Promise<Controller> => {
    for (;;) {
      try {
        return await launch(signal);
      } catch (error) {
        if (!startsAgainAfter(error) || stopped || signal?.aborted) throw error;
        log(`${name}: the start failed (${error instanceof Error ? error.message.split("\n")[0] : String(error)}): standing by again (R61)`);
        await sleep(START_AGAIN_PAUSE_MS, undefined, signal ? { signal } : {}).catch(() => undefined);
      }
    }
  };
  current = await launchServing(options.signal);
  return {
    stop: async () => {
      stopped = true;
      abort.abort();
      await restarting;
      await current?.stop();
    },
  };
}
