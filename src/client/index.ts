/** The typed client of the controller's verbs and the send path under it. */
export { meshClient, parseReply, PUSH_REPLY_MARGIN_MS, accepted, Refused, LIST_FIELD, type MeshClient, type Answer, type CallOptions, type CommandVerb, type DryRunVerb, type ListVerb } from "./client.ts";
export { sendCommand, CommandTransportError, type SendOptions } from "./send.ts";
