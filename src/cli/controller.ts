/**
 * `mesh controller`: runs the controller in the foreground (startController), one log line per
 * event on stderr, until SIGINT or SIGTERM. Its settings come from the environment, read once by
 * parseControllerConfig (R35): a bad setting ends it at once with one line naming the variables.
 * `--env <file>` reads them from the file genesis wrote (`<mesh folder>/controller.env`), as
 * systemd's `EnvironmentFile=` does; run without any, it says where they are (R56).
 */

/** Reads a `KEY=value` file (installer/controllerEnv.ts readEnvFile, loaded by the verb). */
type EnvFileReader = (file: string) => Record<string, string>;

/**
 * The controller's environment: the process's, with the `KEY=value` lines of `envFile` (read by
 * `read`) over it. Throws UsageError naming --env when the file does not exist.
 */
export function controllerEnv(env: Environment, envFile: string | undefined, read: EnvFileReader): Environment {
  if (envFile === undefined) return env;
  if (!existsSync(envFile)) throw new UsageError(`--env: ${envFile} does not exist (genesis writes <mesh folder>/controller.env)`);
  return { ...env, ...read(envFile) };
}

/**
 * parseControllerConfig, with a missing setting's error saying where the settings are (R56):
 * genesis wrote them to `<mesh folder>/controller.env`.
 */
function configOf(env: Environment, envFile: string | undefined, read: EnvFileReader) {
  try {
    return parseControllerConfig(controllerEnv(env, envFile, read));
  } catch (error) {
    if (error instanceof ConfigError && envFile === undefined && error.problem === "unset") {
      throw new ConfigError(error.variables, `${error.message}: genesis wrote the controller's settings to <mesh folder>/controller.env: run \`mesh controller --env <mesh folder>/controller.env\` (or systemd's EnvironmentFile=, as in mesh-controller.service)`, { cause: error, problem: "unset" });
    }
    throw error;
  }
}
import { existsSync } from "node:fs";
import { ConfigError, parseControllerConfig, type Environment } from "../config.ts";
import { EXIT_OK, UsageError, type CliContext } from "./context.ts";
import type { CliVerb } from "./busVerb.ts";
import { METRICS_OPTION, metricsListenOf, serveMetricsAt } from "./metricsFlag.ts";

export const CONTROLLER_CLI_VERB: CliVerb = {
  path: ["controller"],
  examples: [["run the controller with the settings genesis wrote", "mesh controller --env .mesh/controller.env"]],
  summary: "run the controller in the foreground (settings from MESH_* variables, or --env <dir>/controller.env)",
  options: [{ flags: "--env <file>", description: "read the MESH_* settings from this file (genesis writes <mesh folder>/controller.env)" }, METRICS_OPTION],
  async run(ctx: CliContext, _args, options) {
    // Loaded here, not at the top: every other verb of `mesh` starts without the controller's modules.
    const [{ readEnvFile }, { startController }, { lineLog }] = await Promise.all([import("../../installer/controllerEnv.ts"), import("../bootstrap/main.ts"), import("../bootstrap/log.ts")]);
    const listen = metricsListenOf(options);
    const config = configOf(ctx.io.env, typeof options.env === "string" ? options.env : undefined, readEnvFile);
    const log = lineLog(ctx.io.stderr);
    const metrics = listen && (await import("../metrics/controller.ts")).controllerMetrics();
    const stopMetrics = listen && metrics ? await serveMetricsAt(metrics.registry, listen, (line) => log.info(line)) : undefined;
    const controller = await startController(config, { log, ...(metrics ? { metrics } : {}) }).catch(async (error: unknown) => {
      await stopMetrics?.();
      throw error;
    });
    await new Promise<void>((resolve) => {
      const done = () => resolve();
      process.once("SIGINT", done);
      process.once("SIGTERM", done);
    });
    await controller.stop();
    await stopMetrics?.();
    return EXIT_OK;
  },
};
