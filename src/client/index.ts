/** The typed client of the controller's verbs and the send path under it. */
export { meshClient, parseReply, splitSeen, refusesSeen, PUSH_REPLY_MARGIN_MS, accepted, Refused, LIST_FIELD, type MeshClient, type SeenMemory, type Answer, type CallOptions, type CommandVerb, type DryRunVerb, type ListVerb } from "./client.ts";
export { sendCommand, CommandTransportError, type SendOptions } from "./send.ts";
