/**
 * `mesh compose [node...] [--json]`: what a push would compose, secrets redacted, sending nothing.
 * A thin alias of `mesh push --dry-run` (the controller's push verb with `dryRun`, which composes
 * every node from the records, marks which ones a push would send, and redacts every sealed
 * secret and the user list's hashes): one implementation, two names. It asks for the whole mesh,
 * naming no node (a push sends a named node even when not behind, R31), and shows the named nodes
 * alone (their lines, declarations and counts: onlyNamed), so a node reads "would send" exactly
 * when a push without names would send it: when it is behind (`mesh push <node> --dry-run` says
 * "would send" of any node it names). A named node that is not enrolled is refused
 * `unknown-node` naming it, as `mesh push <node>` is (namedNotShown). Exit code as push's: 1 when
 * a node cannot be composed (R30) or a named one is refused.
 */
import { PUSH_CLI_VERB, PUSH_REPLY_MARGIN_MS } from "./push.ts";
import { QUERY_GLOBALS } from "./context.ts";
import type { CliVerb } from "./busVerb.ts";

export const COMPOSE_CLI_VERB: CliVerb = {
  path: ["compose"],
  examples: [["what a push would send node alpha (secrets redacted)", "mesh compose alpha"]],
  globals: QUERY_GLOBALS,
  globalHelp: { timeout: `milliseconds to wait for the controller's reply, + ${PUSH_REPLY_MARGIN_MS} ms for composing (MESH_TIMEOUT_MS)` },
  summary: "print what a push without names would compose and which nodes it would send, secrets redacted; send nothing (mesh push --dry-run of the whole mesh)",
  arguments: [{ name: "node", description: "show these nodes only (default: every node)", optional: true, variadic: true }],
  run: (ctx, args, options) => PUSH_CLI_VERB.run(ctx, args, { ...options, dryRun: true, wait: false, onlyNamed: true }),
};
