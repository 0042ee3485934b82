import { z } from "zod";
import { MeshName } from "../manifest/manifest.ts";
import { PRINCIPAL_KINDS } from "../names.ts";
import type { State } from "../projections/index.ts";
import { explain as explainGrants, type ComposeConfig, type Explanation } from "../compose/index.ts";
import type { QueryContext, QueryDefinition } from "./envelope.ts";

/** The verb of an explain request: `mesh.command.<asker>.explain` (R51). */
export const EXPLAIN_VERB = "explain";

/**
 * A subject as a client would write it: dot-separated non-empty tokens, no whitespace, wildcards
 * (`*`, `>`) allowed (a wildcard subject is allowed only when one grant covers all of it).
 */
const Subject = z
  .string()
  .max(512, "a subject of at most 512 characters")
  .regex(/^[^\s.]+(\.[^\s.]+)*$/, "a NATS subject: dot-separated tokens, no spaces, no empty token");

/** `explain {kind, name, direction, subject}`: may this principal publish or subscribe this subject? */
export const ExplainRequest = z
  .object({
    kind: z.enum(PRINCIPAL_KINDS).describe("the principal's kind: controller, operator, node, module or builder"),
    name: MeshName.describe("the principal's name"),
    direction: z.enum(["pub", "sub"]).describe("pub (publish) or sub (subscribe)"),
    subject: Subject.describe("the subject asked about; wildcards as the client would write them"),
  })
  .strict();
export type ExplainRequest = z.infer<typeof ExplainRequest>;

/**
 * The answer: compose's Explanation (allowed, the grants that allow it with the manifest line or
 * record behind each, or the reason nothing does; onTheBus false when the principal has no
 * credential, R12), plus `assumed` when the server lent no composition settings.
 */
export type ExplainAnswer = Explanation & { assumed?: string };

/** What explain assumes when the shell lends no ComposeConfig: the controller submits to no seat (R19). */
export const ASSUMED_COMPOSE: ComposeConfig = Object.freeze({ controllerSubmits: Object.freeze([]) as readonly string[] });

/**
 * Which manifest line and which record allow `query.kind query.name` to `query.direction` on
 * `query.subject`, or why nothing does (deny by default), from the same derivation composition
 * uses for the user list (src/compose/explain.ts), so the answer cannot drift from what the bus
 * enforces. `context.compose` is the controller's configuration (its stated submit list, R19);
 * without it the controller is assumed to submit to no seat and the answer says so. Pure.
 */
export function answer(state: State, query: ExplainRequest, context: QueryContext = {}): ExplainAnswer {
  const config = context.compose ?? ASSUMED_COMPOSE;
  const explanation = explainGrants(state, { kind: query.kind, name: query.name }, query.direction, query.subject, config);
  return context.compose === undefined
    ? { ...explanation, assumed: "no controller configuration was lent: the controller is assumed to submit to no seat (R19)" }
    : explanation;
}

export const explain: QueryDefinition<typeof ExplainRequest> = {
  kind: "query",
  verb: EXPLAIN_VERB,
  summary: "which manifest line and record allow a principal to publish or subscribe a subject, or why nothing does",
  schema: ExplainRequest,
  answer,
};
