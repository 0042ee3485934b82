import type { Status } from "@nats-io/transport-node";

/** One line of the controller's log and its level. */
export type StatusLine = { level: "info" | "error"; text: string };

/**
 * The controller's log line for a status event of its bus connection, or undefined for the events
 * it does not log. A disconnect or a reconnect names the server the event's `server` names (host
 * and port: the survivor a reconnect reached, never the first configured address, which may be the
 * dead one, R62; no credential, R3); an error, which names none, is said with `current` (the
 * connection's server now) and its message's first line. Pure.
 */
export function busStatusLine(status: Status, current = ""): StatusLine | undefined {
  if (status.type === "disconnect") return { level: "info", text: `disconnected from the bus at ${status.server}` };
  if (status.type === "reconnect") return { level: "info", text: `reconnected to the bus at ${status.server}` };
  if (status.type === "error") return { level: "error", text: `bus connection error at ${current}: ${status.error.message.split("\n")[0]}` };
  return undefined;
}
