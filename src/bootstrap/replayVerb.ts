/**
 * The `replay` verb as the controller serves it (serveCommands' extraVerbs; the decisions are
 * pure, in src/commands/replay.ts): a report of the records folded from sequence 1 ignoring
 * snapshots (R44), or an operator's voiding commit (R45) appended past the commit the fold stopped
 * at, which transact cannot do. Served even while the records hold a commit no fold can read.
 */
import { createHash } from "node:crypto";
import type { NatsConnection } from "@nats-io/transport-node";
import { InvalidEvent, RecordsBehind, replay, type Catalogue } from "../events/catalogue.ts";
import { canonicalJson } from "../projections/canonical.ts";
import type { State } from "../projections/index.ts";
import type { Reply } from "../commands/envelope.ts";
import { CommandId, type ExtraVerb } from "../commands/server.ts";
import { parseRequest } from "../commands/validation.ts";
import { ReplayRequest, decideVoid } from "../commands/replay.ts";
import type { ControllerLog } from "./log.ts";

/** The SHA-256 (hex) of the state's canonical JSON: equal states, equal digests (R41). */
export function stateDigest(state: State): string {
  return createHash("sha256").update(canonicalJson(state)).digest("hex");
}

/** What the records hold, counted (a replay's report). */
export function countsOf(state: State): Record<string, number> {
  return {
    nodes: Object.keys(state.nodes).length,
    modules: Object.keys(state.modules.modules).length,
    seats: Object.keys(state.modules.seats).length,
    credentials: Object.keys(state.credentials).length,
    assignments: Object.values(state.assignments.byModule).reduce((n, nodes) => n + nodes.length, 0),
  };
}

/**
 * The report of a fold from sequence 1, ignoring snapshots (R44): `valid` (every commit folds,
 * voided ones skipped), `lastSequence`, `digest`, `counts`, and `stoppedAt` (sequence, event
 * types, one-line reason) when a commit stops the fold. `matchesServing` says whether the state the
 * controller serves from (snapshot + tail) is the same state, byte for byte (R41); `behind` is the
 * world's evidence that the records are behind it (R43), absent when there is none.
 */
export async function replayReport(nc: NatsConnection, catalogue: Catalogue): Promise<Record<string, unknown>> {
  await catalogue.catchUp().catch((error: unknown) => {
    if (!(error instanceof InvalidEvent || error instanceof RecordsBehind)) throw error;
  });
  const behind = catalogue.behind === null ? {} : { behind: catalogue.behind };
  let state: State;
  try {
    state = await replay(nc);
  } catch (error) {
    if (!(error instanceof InvalidEvent)) throw error;
    return {
      valid: false,
      lastSequence: catalogue.state.sequence,
      stoppedAt: { sequence: error.sequence, types: error.types, reason: error.message },
      counts: countsOf(catalogue.state),
      ...behind,
      changed: false,
    };
  }
  const digest = stateDigest(state);
  return {
    valid: true,
    lastSequence: state.sequence,
    digest,
    counts: countsOf(state),
    matchesServing: digest === stateDigest(catalogue.state),
    ...behind,
    changed: false,
  };
}

/** What replayVerb needs from the controller. */
export type ReplayDependencies = {
  nc: NatsConnection;
  catalogue: Catalogue;
  log: ControllerLog;
  now(): Date;
  newId(): string;
};

/**
 * The shell's `replay` verb: `{}` answers replayReport (nothing changes); `{void, reason}` appends
 * the CommitVoided decideVoid decides (refusals as it says) and answers its sequence and what the
 * fold holds next (null when the records fold to their end again).
 */
export function replayVerb(deps: ReplayDependencies): ExtraVerb {
  return async (body, actor): Promise<Reply> => {
    const { commandId: givenId, ...fields } = body;
    if (givenId !== undefined && !CommandId.safeParse(givenId).success) {
      return { ok: false, error: { code: "invalid-request", field: "commandId", message: "\"commandId\": use 1 to 128 letters, digits, dots, dashes, colons or underscores, or leave it out" } };
    }
    const parsed = parseRequest(ReplayRequest, fields);
    if (!parsed.ok) return { ok: false, error: parsed.refusal };
    const request = parsed.value;
    if (request.void === undefined && request.reason === undefined) {
      return { ok: true, ...(await replayReport(deps.nc, deps.catalogue)) };
    }
    const commandId = typeof givenId === "string" ? givenId : deps.newId();
    const envelope = { commandId, actor, now: deps.now().toISOString(), secrets: [] };
    const result = await deps.catalogue.appendPastHeld(commandId, (held) => decideVoid(held, request, envelope));
    if (!result.ok) return { ok: false, error: result.refusal };
    const next = deps.catalogue.held;
    deps.log.info(`replay: ${actor} voided the commit at sequence ${request.void ?? "?"} (commit ${result.sequence}): ${request.reason ?? ""}`);
    return {
      ok: true,
      commandId,
      duplicate: result.duplicate,
      sequence: result.sequence,
      voided: request.void,
      lastSequence: deps.catalogue.state.sequence,
      stoppedAt: next === null ? null : { sequence: next.sequence, types: next.types, reason: next.message },
      changed: !result.duplicate,
    };
  };
}
