/**
 * `mesh controller`: runs the controller in the foreground (startController), one log line per
 * event on stderr, until SIGINT or SIGTERM. Its settings come from the environment, read once by
 * parseControllerConfig (R35): a bad setting ends it at once with one line naming the variables.
 */
import { parseControllerConfig } from "../config.ts";
import { startController } from "../bootstrap/main.ts";
import { lineLog } from "../bootstrap/log.ts";
import { EXIT_OK, type CliContext } from "./context.ts";
import type { CliVerb } from "./verbs.ts";

export const CONTROLLER_CLI_VERB: CliVerb = {
  path: ["controller"],
  summary: "run the controller in the foreground (settings from MESH_* variables)",
  async run(ctx: CliContext) {
    const config = parseControllerConfig(ctx.io.env);
    const log = lineLog(ctx.io.stderr);
    const controller = await startController(config, { log });
    await new Promise<void>((resolve) => {
      const done = () => resolve();
      process.once("SIGINT", done);
      process.once("SIGTERM", done);
    });
    await controller.stop();
    return EXIT_OK;
  },
};
