/**
 * The command registry: every command and query the controller answers on `commandSubject(verb)`,
 * keyed by verb (REGISTRY). `commands` change the records (decide → one commit → reply); `queries`
 * only read. Adding one: its file here (`command(verb, {...})` or `query(verb, {...})`), its
 * contract line in src/contracts/verbs.ts, and its line in REGISTRY.
 */
import type { CommandVerb, QueryVerb } from "../contracts/verbs.ts";
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
import { pushes } from "./pushes.ts";
import { explain } from "./explain.ts";

/**
 * The server's half of the registry: for every command and query of the contract
 * (src/contracts/verbs.ts VERBS), its definition, typed by that verb's contract. The type refuses
 * a missing verb, an extra one, or a definition under another verb's name. Shell verbs (push,
 * reports, replay) are served by the controller's shell (ShellVerbs in server.ts).
 */
export type Registry = { readonly [V in CommandVerb]: CommandDefinition<V> } & { readonly [V in QueryVerb]: QueryDefinition<V> };

/** Every command and query the controller answers: one line per verb. */
export const REGISTRY: Registry = {
  "node.enrol": nodeEnrol,
  "node.remove": nodeRemove,
  "module.register": moduleRegister,
  "module.issue": moduleIssue,
  "module.retire": moduleRetire,
  assign,
  unassign,
  "seat.alias": seatAlias,
  "seat.handover": seatHandover,
  "overlay.place": overlayPlace,
  "credential.rotate": credentialRotate,
  where,
  seats,
  nodes,
  modules,
  credentials,
  history,
  pushes,
  explain,
};

/** Any command's definition, or any query's: what the server's one path holds after looking a verb up. */
export type AnyDefinition = CommandDefinition | QueryDefinition;

function ofKind<Kind extends AnyDefinition["kind"]>(kind: Kind): Record<string, Extract<AnyDefinition, { kind: Kind }>> {
  return Object.fromEntries(Object.entries(REGISTRY as Record<string, AnyDefinition>).filter(([, d]) => d.kind === kind)) as Record<string, Extract<AnyDefinition, { kind: Kind }>>;
}

/** Every verb that changes the records, keyed by verb (`node.enrol`, `assign`, ...): REGISTRY's commands. */
export const commands: Readonly<Record<string, CommandDefinition>> = ofKind("command");

/** Every read-only verb, keyed by verb: REGISTRY's queries. `history` and `pushes` carry `fromCommits`: it is answered from the records. */
export const queries: Readonly<Record<string, QueryDefinition>> = ofKind("query");

/** The definition of a verb, command or query, or undefined for a verb the registry does not hold. */
export function definitionOf(verb: string): AnyDefinition | undefined {
  return Object.hasOwn(REGISTRY, verb) ? (REGISTRY as Record<string, AnyDefinition>)[verb] : undefined;
}

export {
  type CommandDefinition, type QueryDefinition, type Envelope, type Decision, type Refusal, type Reply, type ReplyTools,
  type FreshSecret, type QueryContext, refuse, metaOf, command, query,
} from "./envelope.ts";
export { EXPLAIN_VERB, ExplainRequest, type ExplainAnswer } from "./explain.ts";
export { parseRequest, refusalOfZodError } from "./validation.ts";
export { addressFor, addressResolver, genesisAddress } from "./shared.ts";
export { historyOf, mentions, concerns, summaryOf, HISTORY_LIMIT, type HistoryEntry } from "./history.ts";
export {
  nodeEnrol, nodeRemove, moduleRegister, moduleIssue, moduleRetire, assign, unassign, seatAlias, seatHandover, overlayPlace, credentialRotate,
  where, seats, nodes, modules, credentials, history, pushes, explain,
};
