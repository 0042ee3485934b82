import { hash } from "node:crypto";
import type { Commit } from "../events/index.ts";
import { canonicalJson } from "../projections/canonical.ts";
import type { Refusal } from "../decision.ts";

/**
 * The request a commit answered, recorded with it (R53): the verb and the digest (hex SHA-256) of
 * its canonical arguments, commandId excluded. The arguments themselves are not recorded: they may
 * be large (a manifest); the commit's entity names what the command was about.
 */
export type CommandRequest = { verb: string; digest: string };

/** The request `verb` with the parsed arguments `args` (commandId excluded) is recorded as (R53). Pure. */
export function commandRequest(verb: string, args: unknown): CommandRequest {
  // crypto.hash, one call: a createHash object per command cost four times as much.
  return { verb, digest: hash("sha256", canonicalJson({ verb, arguments: args }), "hex") };
}

/**
 * R53: a command id names one command. Given the commit an id was first used for and the request
 * now carrying the same id: null when it is the same command (the same verb and argument digest: an
 * idempotent retry, a duplicate), else the refusal `command-id-reused` naming the first verb and
 * the entity it was about (never its arguments' values, which may hold secrets). A commit recorded
 * before requests were recorded cannot be compared and is taken as the same command. Pure.
 */
export function commandIdReused(original: Commit, request: CommandRequest): Refusal | null {
  const first = original.request;
  if (first === undefined) return null;
  if (first.verb === request.verb && first.digest === request.digest) return null;
  const what = first.verb === request.verb ? "with other arguments" : `for ${request.verb}`;
  return {
    code: "command-id-reused",
    field: "commandId",
    message: `command id ${original.commandId} was first used for ${first.verb} about ${original.entity.kind} ${original.entity.id}: it cannot be used again ${what}; leave --command-id out or give a new one`,
  };
}
