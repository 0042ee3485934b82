import type { Refusal } from "../decision.ts";

/**
 * A step of `mesh up` failed: one line saying which and why. Its own module, so the CLI tells an
 * UpError without loading `up` itself (src/cli/up.ts loads that only for the verbs that run it).
 */
export class UpError extends Error {
  override readonly name = "UpError";
  /** The controller's refusal code when the controller answered and refused; undefined otherwise. */
  readonly code: string | undefined;
  constructor(message: string, code?: string) {
    super(message);
    this.code = code;
  }
}

/** The code every verb but `mesh replay` is refused with while the records are behind the world (R43). */
export const RECORDS_BEHIND = "records-behind";

/**
 * The UpError for a step of `mesh up` or `mesh status` the controller refused (`verb`: its bus
 * name, `refusal`: what it answered), carrying the refusal's code (exit 1). A `records-behind`
 * refusal (R43) names no verb: up and status ask for reads the person never typed (nodes, seats,
 * ...), and the controller refuses them all alike; the controller's message (its evidence and
 * `mesh replay`) is kept. Any other refusal names the step as the person would type it.
 */
export function refusedStep(verb: string, refusal: Refusal): UpError {
  if (refusal.code === RECORDS_BEHIND) {
    return new UpError(`the controller refuses every command and read but \`mesh replay\` (${RECORDS_BEHIND}): ${refusal.message}`, refusal.code);
  }
  return new UpError(`the controller refused \`mesh ${verb.split(".").join(" ")}\` (${refusal.code}): ${refusal.message}`, refusal.code);
}

/**
 * What `mesh up` of the mesh in `dir` ends with when its controller refuses `records-behind`
 * (R43): the refusal (refusedStep), and that the bus, the controller and the host agent it
 * started are still running, as they must be for `mesh replay` and for the host to tell the
 * controller what it holds; `mesh down` stops them.
 */
export function upOverRecordsBehind(dir: string, refusal: Refusal): UpError {
  const refused = refusedStep("nodes", refusal);
  return new UpError(`${refused.message}; the bus, the controller and the host agent are still running for that (\`mesh down --dir ${dir}\` stops them)`, refused.code);
}
