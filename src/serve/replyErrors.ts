/**
 * Reply errors (STYLE.md 3): the one function that maps adapter errors to reply codes, and the
 * error that carries a command id to it (R76). Apart from the server so its mapping reads alone.
 */
import type { Refusal } from "../commands/envelope.ts";
import { FencedAppend, FenceRetriesExhausted, InvalidEvent, ReadInterrupted, RecordsBehind, RecordsUnsafe } from "../records/errors.ts";
import { JetStreamUnavailable } from "../bus/retry.ts";
import { transientBusConditionOf } from "../bus/errors.ts";

/**
 * A command failed after its id was known (its commit may be on the records): replyErrorOf answers
 * its cause's code with `commandId`, so the asker can send it again with that id (R53, R76).
 */
export class CommandFailed extends Error {
  override readonly name = "CommandFailed";
  readonly commandId: string;
  constructor(commandId: string, cause: unknown) {
    super(`command ${commandId}: ${cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause)}`, { cause });
    this.commandId = commandId;
  }
}

/**
 * The one place adapter errors become reply codes (STYLE.md 3): a fenced-out append is
 * `busy-retry` (retry the same command id), an invalid record is `invalid-records`, records behind
 * the world (R43) are `records-behind` naming the evidence and `mesh replay`, records that erase
 * commits or erased some (R47) are `records-unsafe` naming the setting and its fix, a read of the records
 * that could not go on (the bus away past the read's stall limit, R58) is `records-unavailable`, the JetStream API unavailable through retryJetStream's bound is
 * `bus-unavailable`, and so is any other transient bus condition (transientBusConditionOf: a
 * timeout, no responders, a leader election, a connection closed under the request), naming it and
 * saying to send the command again; anything else
 * `internal` with a generic message; the detail goes to the log only, never to the asker. A
 * CommandFailed answers its cause's code naming the command id (R76).
 */
export function replyErrorOf(error: unknown): Refusal {
  if (error instanceof CommandFailed) {
    const refusal = replyErrorOf(error.cause);
    return refusal.code === "internal"
      ? { code: "internal", message: `the controller failed to handle command ${error.commandId}: see its log; it may have been applied: send it again with the same command id to get its reply (it appends nothing twice, R53)`, commandId: error.commandId }
      : { ...refusal, commandId: error.commandId };
  }
  if (error instanceof RecordsBehind) {
    // R43: never "busy, retry" over records that went back; the evidence and the way out.
    return { code: "records-behind", message: error.message };
  }
  if (error instanceof RecordsUnsafe) {
    // R47: nothing is appended onto records that erase commits; the setting and the way out.
    return { code: "records-unsafe", message: error.message };
  }
  if (error instanceof FencedAppend || error instanceof FenceRetriesExhausted) {
    return { code: "busy-retry", message: "another controller kept writing the records: send the same command again (same command id)" };
  }
  if (error instanceof InvalidEvent) {
    return {
      code: "invalid-records",
      message: error.sequence === 0
        ? "the command produced an event that fails its schema: nothing was written; report this as a bug"
        : `the records hold a commit the controller cannot fold at sequence ${error.sequence} (${error.types.join(", ") || "no event type"}): it serves nothing else until it is voided; see \`mesh replay\`, then \`mesh replay --void ${error.sequence} --reason <why>\` (R45)`,
    };
  }
  if (error instanceof JetStreamUnavailable) {
    return { code: "bus-unavailable", message: "the bus's JetStream API did not answer through several retries, so the step that needed it did not run: send the command again once the bus is back (a push sends only what is still behind, R31)" };
  }
  if (error instanceof ReadInterrupted) {
    return { code: "records-unavailable", message: "the controller could not read the records from the bus: send the command again once the bus is back" };
  }
  // A bus condition that passes (a cluster's server stopped, a leader election) is no fault of the
  // controller: the asker hears which, and that sending again is safe (the same command id appends
  // nothing twice, R53; a push sends only what is still behind, R31).
  const transient = transientBusConditionOf(error);
  if (transient !== undefined) {
    return { code: "bus-unavailable", message: `the bus was unavailable for a moment (${transient.reason}), so the controller could not finish: send the command again (the same command id appends nothing twice; a push sends only what is still behind, R31)` };
  }
  return { code: "internal", message: "the controller failed to handle the command: see its log" };
}
