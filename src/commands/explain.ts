import { ExplainRequest, type BodyOf, type GrantsAnswer } from "../contracts/verbs.ts";
import { credentialOf, isEnrolled, moduleOf, type State } from "../projections/index.ts";
import { credentialNote, explain as explainGrants, grantsOf, type ComposeConfig, type Explanation } from "../compose/index.ts";
import { query, notFound, type QueryContext, type QueryRefused } from "./envelope.ts";

/** The verb of an explain request, sent on commandSubject(asker, EXPLAIN_VERB) (R51). */
export const EXPLAIN_VERB = "explain";


/**
 * The answer: compose's Explanation (allowed, the grants that allow it with the manifest line or
 * record behind each, or the reason nothing does; onTheBus false when the principal has no
 * credential, R12; keyUnsent when its key was rotated after the user list last sent, R50:
 * credentialNote), plus `assumed` when the server lent no composition settings.
 */
export type ExplainAnswer = BodyOf<"explain">;


/**
 * Whether the records know the principal: the controller always; a node once enrolled, a module
 * once registered; anyone with a credential (operators, builders). Pure.
 */
export { ExplainRequest, type GrantsAnswer };

export function principalKnown(state: State, principal: { kind: ExplainRequest["kind"]; name: string }): boolean {
  if (principal.kind === "controller") return true;
  if (credentialOf(state.credentials, principal) !== undefined) return true;
  if (principal.kind === "node") return isEnrolled(state.nodes, principal.name);
  if (principal.kind === "module") return moduleOf(state.modules, principal.name) !== undefined;
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
    explanation = { principal, user, grants, responder, onTheBus: credentialOf(state.credentials, principal) !== undefined, ...credentialNote(state, principal) };
  } else {
    explanation = explainGrants(state, principal, query.direction, query.subject, config);
  }
  return context.compose === undefined
    ? { ...explanation, assumed: "no controller configuration was lent: the controller is assumed to submit to no seat (R19)" }
    : explanation;
}

export const explain = query("explain", {
  answer,
});
