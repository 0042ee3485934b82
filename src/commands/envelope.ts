import { VERBS, type AnyReply, type BodyOf, type CommandVerb, type ParsedRequestOf, type QueryVerb } from "../contracts/verbs.ts";
import type { Commit, Entity, MeshEvent } from "../events/index.ts";
import type { Decision, Refusal } from "../decision.ts";
import type { State, SequencedCommit } from "../projections/index.ts";
import type { ComposeConfig } from "../compose/types.ts";
import type { PageSpec } from "./paging.ts";
import type { BoundedList } from "./fit.ts";

export type { Decision, Refusal } from "../decision.ts";

/**
 * A fresh secret the request handler made before decide ran (R63): an nkey user seed (for the
 * reply only: it never enters an event), its public key `nkey` (the user list's entry) and the seed
 * sealed with the mesh key (crypto/secrets newFreshSecret).
 */
export type FreshSecret = { seed: string; nkey: string; sealed: string };

/**
 * What the handler fills in once for every command, so decide needs no clock, no randomness and
 * no I/O: the command id, who asked, the time (ISO 8601) and the fresh secrets it asked for.
 */
export type Envelope = { commandId: string; actor: string; now: string; secrets: readonly FreshSecret[] };

/**
 * Capabilities the shell lends a reply: opening a secret sealed with the mesh key, and sealing
 * one to a node's public key. Passed in so command files import no crypto.
 */
export type ReplyTools = {
  openSecret(sealed: string): string;
  sealToNode(publicKey: string, secret: string): string;
};

/**
 * One command verb that changes the records: its decide and reply, typed by its contract
 * (src/contracts/verbs.ts VERBS[verb]: the request it reads, the body it answers). Made with
 * `command(verb, ...)`, which takes the schema from the contract: one definition per verb.
 */
export type CommandDefinition<V extends CommandVerb = CommandVerb> = {
  kind: "command";
  /** `node.enrol`: the last token of the asker's command subject (names.ts commandSubject, R51). */
  verb: V;
  /** The contract's request schema (VERBS[verb].request), not a second one. */
  schema: (typeof VERBS)[V]["request"];
  /** How many fresh secrets decide will take from the envelope. */
  secretsNeeded(state: State, command: ParsedRequestOf<V>): number;
  /** Pure: the events of one commit, or a refusal. */
  decide(state: State, command: ParsedRequestOf<V>, envelope: Envelope): Decision;
  /**
   * The reply's body, from the state after the commit, the commit's events and the entity it is
   * about. An `unchanged` decision calls it with no events (the state is the one decide saw): the
   * command, given last, says what it asked for.
   */
  reply(state: State, events: readonly MeshEvent[], tools: ReplyTools, entity: Entity, command: ParsedRequestOf<V>): BodyOf<V>;
  /**
   * The reply's lists that grow with the mesh (R59): the shell sends the reply whole while it
   * fits the bus's max payload, else cuts these lists and says what it left out (fit.ts).
   */
  bounded?: readonly BoundedList[];
};

/** The command definition of `verb`: its parts, with the schema taken from its contract. */
export function command<V extends CommandVerb>(verb: V, parts: Omit<CommandDefinition<V>, "kind" | "verb" | "schema">): CommandDefinition<V> {
  return { kind: "command", verb, schema: VERBS[verb].request, ...parts };
}

/**
 * What the shell lends a query besides the state: the controller's composition settings (for
 * `explain`, whose answer depends on the stated submit list, R19). Absent in pure tests and on a
 * server started without them; a query that needs them says what it assumes then.
 */
export type QueryContext = { compose?: ComposeConfig };

/** One read-only verb: answered from the state, appends nothing. Typed by its contract, as CommandDefinition. */
export type QueryDefinition<V extends QueryVerb = QueryVerb> = {
  kind: "query";
  verb: V;
  schema: (typeof VERBS)[V]["request"];
  answer(state: State, query: ParsedRequestOf<V>, context?: QueryContext): BodyOf<V> | QueryRefused;
  /**
   * Present on list verbs, whose reply grows with the mesh (R59): the shell accepts `limit` and
   * `continue` beside the verb's own fields and answers one page of `answer(...)[page.field]`
   * that fits the bus's max payload, with a `continue` token when more remain (paging.ts).
   */
  page?: PageSpec;
  /**
   * Present on verbs answered from the records rather than the state (`history`): the shell scans
   * the commits from `since` (or 1) up to the folded sequence, keeps those `concerns(commit, query)` accepts, and
   * answers with `answer(kept, query)`; `answer(state, query)` above is then only a fallback.
   */
  fromCommits?: {
    /** The first sequence worth scanning (default 1): the commits before it cannot change the answer. */
    since?(state: State, query: ParsedRequestOf<V>): number;
    concerns(commit: Commit, query: ParsedRequestOf<V>): boolean;
    answer(commits: readonly SequencedCommit[], query: ParsedRequestOf<V>): BodyOf<V> | QueryRefused;
  };
};

/** The query definition of `verb`: its parts, with the schema taken from its contract. */
export function query<V extends QueryVerb>(verb: V, parts: Omit<QueryDefinition<V>, "kind" | "verb" | "schema">): QueryDefinition<V> {
  return { kind: "query", verb, schema: VERBS[verb].request, ...parts };
}

/** Every reply as the server builds it, before its verb's contract types it (src/contracts/verbs.ts, AnyReply). */
export type Reply = AnyReply;

/**
 * A query's answer that is a refusal, not an answer: the entity asked about does not exist
 * (`not-found`). The server replies `{ ok: false, error: refusal }`, so the CLI exits 1.
 */
export class QueryRefused {
  constructor(readonly refusal: Refusal) {}
}

/** Shorthand for a query answer saying the entity asked about does not exist (code `not-found`). */
export function notFound(message: string, field?: string): QueryRefused {
  return new QueryRefused(field === undefined ? { code: "not-found", message } : { code: "not-found", message, field });
}

/** Shorthand for a refusal decision. */
export function refuse(code: string, message: string, field?: string): Decision {
  return { ok: false, refusal: field === undefined ? { code, message } : { code, message, field } };
}

/** Shorthand for an accepted decision that appends nothing: the records already say it. */
export function unchanged(entity: Entity): Decision {
  return { ok: true, unchanged: true, entity, events: [] };
}

/** The meta every event of a command carries, from its envelope. */
export function metaOf(envelope: Envelope): { actor: string; commandId: string; at: string } {
  return { actor: envelope.actor, commandId: envelope.commandId, at: envelope.now };
}
