/**
 * The command registry: every verb the controller answers on `commandSubject(verb)`, keyed by verb.
 * `commands` change the records (decide → one commit → reply); `queries` only read.
 */
import type { z } from "zod";
import type { CommandDefinition, QueryDefinition } from "./envelope.ts";
import { nodeEnrol } from "./nodeEnrol.ts";
import { nodeRemove } from "./nodeRemove.ts";
import { moduleRegister } from "./moduleRegister.ts";
import { moduleIssue } from "./moduleIssue.ts";
import { moduleRetire } from "./moduleRetire.ts";
import { assign } from "./assign.ts";
import { unassign } from "./unassign.ts";
import { seatAlias } from "./seatAlias.ts";
import { seatHandover } from "./seatHandover.ts";
import { overlayPlace } from "./overlayPlace.ts";
import { credentialRotate } from "./credentialRotate.ts";
import { where } from "./where.ts";
import { seats } from "./seats.ts";
import { nodes } from "./nodes.ts";
import { modules } from "./modules.ts";
import { credentials } from "./credentials.ts";
import { history } from "./history.ts";
import { explain } from "./explain.ts";

function byVerb<T extends { verb: string }>(definitions: readonly T[]): Record<string, T> {
  return Object.fromEntries(definitions.map((d) => [d.verb, d]));
}

/** Every verb that changes the records, keyed by verb (`node.enrol`, `assign`, ...). */
export const commands: Record<string, CommandDefinition<z.ZodType>> = byVerb<CommandDefinition<z.ZodType>>([
  nodeEnrol, nodeRemove, moduleRegister, moduleIssue, moduleRetire, assign, unassign, seatAlias, seatHandover, overlayPlace, credentialRotate,
]);

/** Every read-only verb, keyed by verb. `history` carries `fromCommits`: it is answered from the records. */
export const queries: Record<string, QueryDefinition<z.ZodType>> = byVerb<QueryDefinition<z.ZodType>>([
  where, seats, nodes, modules, credentials, history, explain,
]);

/** The definition of a verb, command or query, or undefined for a verb that does not exist. */
export function definitionOf(verb: string): CommandDefinition<z.ZodType> | QueryDefinition<z.ZodType> | undefined {
  return Object.hasOwn(commands, verb) ? commands[verb] : Object.hasOwn(queries, verb) ? queries[verb] : undefined;
}

export {
  type CommandDefinition, type QueryDefinition, type Envelope, type Decision, type Refusal, type Reply, type ReplyTools,
  type FreshSecret, type QueryContext, refuse, metaOf,
} from "./envelope.ts";
export { EXPLAIN_VERB, ExplainRequest, type ExplainAnswer } from "./explain.ts";
export { parseRequest, refusalOfZodError } from "./validation.ts";
export { addressFor, addressResolver, genesisAddress } from "./shared.ts";
export { historyOf, mentions, concerns, summaryOf, HISTORY_LIMIT, type HistoryEntry } from "./history.ts";
export {
  nodeEnrol, nodeRemove, moduleRegister, moduleIssue, moduleRetire, assign, unassign, seatAlias, seatHandover, overlayPlace, credentialRotate,
  where, seats, nodes, modules, credentials, history, explain,
};
