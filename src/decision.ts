import type { Entity, MeshEvent } from "./events/index.ts";

/**
 * What every decide returns and every refusal looks like (STYLE.md 3), below the commands, the
 * composition and the records adapter, so each of them names these types without importing the
 * commands (test/unit/layering.test.ts).
 */

/**
 * A business refusal: a stable code (asserted by tests), a message naming the fix, the field; the
 * command's id when the command failed after it was known (R76, replyErrorOf).
 */
export type Refusal = { code: string; message: string; field?: string; commandId?: string };

/**
 * What decide returns: the events of one commit about one entity; or `unchanged`: accepted, the
 * records already say it (an identical manifest registered again), so nothing is appended and the
 * reply says `unchanged: true`; or a refusal. An unchanged decision has no events (so code that
 * reads `events` sees none); the writer checks `decision.unchanged` before appending.
 */
export type Decision =
  | { ok: true; unchanged?: false; entity: Entity; events: MeshEvent[] }
  | { ok: true; unchanged: true; entity: Entity; events: [] }
  | { ok: false; refusal: Refusal };
