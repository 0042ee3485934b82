import { z } from "zod";
import { MeshName } from "../manifest/manifest.ts";
import { PRINCIPAL_KINDS } from "../names.ts";
import { credentialOf, type State } from "../projections/index.ts";
import { explain as explainGrants, grantsOf, type ComposeConfig, type Explanation, type Grant } from "../compose/index.ts";
import { notFound, type QueryContext, type QueryDefinition, type QueryRefused } from "./envelope.ts";

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
    direction: z.enum(["pub", "sub"]).optional().describe("pub (publish) or sub (subscribe); with subject, or neither to list every grant"),
    subject: Subject.optional().describe("the subject asked about; wildcards as the client would write them"),
  })
  .strict()
  .refine((request) => (request.direction === undefined) === (request.subject === undefined), {
    message: "give direction and subject together, or neither to list the principal's grants",
    path: ["subject"],
  });
export type ExplainRequest = z.infer<typeof ExplainRequest>;

/**
 * The answer: compose's Explanation (allowed, the grants that allow it with the manifest line or
 * record behind each, or the reason nothing does; onTheBus false when the principal has no
 * credential, R12), plus `assumed` when the server lent no composition settings.
 */
export type ExplainAnswer = (Explanation | GrantsAnswer) & { assumed?: string };

/**
 * The answer without a subject: every grant of the principal, each with the manifest line or
 * record behind it (the same derivation as the user list), whether it answers requests
 * (`responder`), and whether it is on the bus (R12).
 */
export type GrantsAnswer = {
  principal: { kind: ExplainRequest["kind"]; name: string };
  user: string;
  grants: Grant[];
  responder: boolean;
  onTheBus: boolean;
  credentialSince?: string;
};

/**
 * Whether the records know the principal: the controller always; a node once enrolled, a module
 * once registered; anyone with a credential (operators, builders). Pure.
 */
export function principalKnown(state: State, principal: { kind: ExplainRequest["kind"]; name: string }): boolean {
  if (principal.kind === "controller") return true;
  if (credentialOf(state.credentials, principal) !== undefined) return true;
  if (principal.kind === "node") return Object.hasOwn(state.nodes, principal.name);
  if (principal.kind === "module") return Object.hasOwn(state.modules.modules, principal.name);
  return false;
}

/** What explain assumes when the shell lends no ComposeConfig: the controller submits to no seat (R19). */
export const ASSUMED_COMPOSE: ComposeConfig = Object.freeze({ controllerSubmits: Object.freeze([]) as readonly string[] });

/**
 * Without direction and subject: every grant of the principal (GrantsAnswer). With them: which manifest line and which record allow `query.kind query.name` to `query.direction` on
 * `query.subject`, or why nothing does (deny by default), from the same derivation composition
 * uses for the user list (src/compose/explain.ts), so the answer cannot drift from what the bus
 * enforces. `context.compose` is the controller's configuration (its stated submit list, R19);
 * without it the controller is assumed to submit to no seat and the answer says so. A principal the
 * records do not know is `not-found` (field `name`), not a denial. Pure.
 */
export function answer(state: State, query: ExplainRequest, context: QueryContext = {}): ExplainAnswer | QueryRefused {
  const config = context.compose ?? ASSUMED_COMPOSE;
  const principal = { kind: query.kind, name: query.name };
  if (!principalKnown(state, principal)) {
    return notFound(`no ${query.kind} named ${query.name} in the records: see mesh ${query.kind === "module" ? "modules" : query.kind === "node" ? "nodes" : "credentials"}`, "name");
  }
  let explanation: Explanation | GrantsAnswer;
  if (query.direction === undefined || query.subject === undefined) {
    const { grants, responder, user } = grantsOf(state, principal, config);
    const credential = credentialOf(state.credentials, principal);
    explanation = { principal, user, grants, responder, onTheBus: credential !== undefined, ...(credential ? { credentialSince: credential.mintedAt } : {}) };
  } else {
    explanation = explainGrants(state, principal, query.direction, query.subject, config);
  }
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
