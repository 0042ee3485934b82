/**
 * `mesh compose [node...] [--json]`: what a push would compose, secrets redacted, sending nothing.
 * A thin alias of `mesh push --dry-run` (the controller's push verb with `dryRun`, which composes
 * every node from the records, marks which ones a push would send, and redacts every sealed
 * secret and the user list's hashes): one implementation, two names. The nodes named are those a
 * push of them would send even when not behind, exactly as for `mesh push`. Exit code as push's:
 * 1 when a node cannot be composed (R30).
 */
import { PUSH_CLI_VERB } from "./push.ts";
import type { CliVerb } from "./verbs.ts";

export const COMPOSE_CLI_VERB: CliVerb = {
  path: ["compose"],
  summary: "print what a push would compose, secrets redacted; send nothing (mesh push --dry-run)",
  arguments: [{ name: "node", description: "nodes a push would send even when not behind", optional: true, variadic: true }],
  run: (ctx, args, options) => PUSH_CLI_VERB.run(ctx, args, { ...options, dryRun: true, wait: false }),
};
