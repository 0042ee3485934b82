import type { PushReply } from "../contracts/verbs.ts";

/** How `mesh push` and `mesh up` say a push's servers took its user list (R60). Pure. */

/** One server's outcome of a user list in a push report (R60), as `servers` carries it. */
export type ServerLine = NonNullable<PushReply["servers"]>[number];

/**
 * R60: how a cluster's servers took the user list of a push: one line with every server's outcome,
 * `unchanged`, `reloaded`, `repaired` or `MISSED`, then one line per missed server (missedServerLine).
 * A server that reloaded while another server of the same holder already ran the very same list
 * had missed an earlier one: it is `repaired`. Nothing for a push that installed no list.
 */
export function serverLines(servers: readonly ServerLine[]): string[] {
  if (servers.length === 0) return [];
  const ranItAlready = new Set(servers.filter((s) => s.ok && s.changed === false).map((s) => s.node));
  const outcome = (s: ServerLine) => (!s.ok ? "MISSED" : s.changed === false ? "unchanged" : ranItAlready.has(s.node) ? "repaired (it had missed an earlier list)" : "reloaded");
  return [
    `user list on each server (R60): ${servers.map((s) => `${s.server} ${outcome(s)}`).join(", ")}`,
    ...servers.filter((s) => !s.ok).map(missedServerLine),
  ];
}

/** R60: a server that missed the user list, why, and the fix (the next push sends it again). */
export function missedServerLine(server: ServerLine): string {
  return `server ${server.server} missed the user list: ${server.error ?? "no reason given"}; the next push sends it again`;
}
