import { z } from "zod";
import type { Entity } from "../events/index.ts";
import type { SequencedCommit, State } from "../projections/index.ts";
import type { QueryDefinition } from "./envelope.ts";

/**
 * `history {kind, id}`: the events of one entity (`node alpha`, `module showcase`, `seat mesh-build`,
 * `operator alice`), with actor, command id and time. Answered from the records, not the state:
 * the shell reads the commits on `catalogueSubject(kind, id)` and calls `historyOf`.
 */
export const HistoryRequest = z
  .object({
    kind: z.string().regex(/^[a-z]+$/, "an entity kind: node, module, seat, controller, operator or builder").describe("the entity's kind"),
    id: z.string().regex(/^[a-z0-9-]+$/, "an entity id: lowercase letters, digits and dashes").describe("the entity's name"),
  })
  .strict();
export type HistoryRequest = z.infer<typeof HistoryRequest>;

/** One event of an entity's history. Secrets (`hash`, `sealed`) are left out (R3). */
export type HistoryEntry = {
  sequence: number;
  commandId: string;
  actor: string;
  at: string;
  type: string;
  details: Record<string, unknown>;
};

const HIDDEN = new Set(["type", "actor", "commandId", "at", "hash", "sealed"]);

/**
 * The history of `query`'s entity from commits in stream order: only commits about that entity
 * are kept, so the caller may pass more. Pure.
 */
export function historyOf(commits: readonly SequencedCommit[], query: HistoryRequest): { entity: Entity; events: HistoryEntry[] } {
  const entity = { kind: query.kind, id: query.id };
  const events = commits
    .filter(({ commit }) => commit.entity.kind === query.kind && commit.entity.id === query.id)
    .flatMap(({ sequence, commit }) =>
      commit.events.map((event) => ({
        sequence,
        commandId: event.commandId,
        actor: event.actor,
        at: event.at,
        type: event.type,
        details: Object.fromEntries(Object.entries(event).filter(([key]) => !HIDDEN.has(key))),
      })),
    );
  return { entity, events };
}

export const history: QueryDefinition<typeof HistoryRequest> = {
  kind: "query",
  verb: "history",
  summary: "the events of one entity, with actor, command id and time",
  schema: HistoryRequest,
  answer(_state: State, _query: HistoryRequest): never {
    throw new Error("history is answered from the records: read the entity's commits and call fromCommits.answer");
  },
  fromCommits: {
    entity: (query) => ({ kind: query.kind, id: query.id }),
    answer: historyOf,
  },
};
