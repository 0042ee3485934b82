import type { NatsConnection } from "@nats-io/transport-node";
import { meshClient } from "../../src/client/client.ts";
import { isVerb, type AnyReply, type RequestOf } from "../../src/contracts/verbs.ts";

/**
 * Sends `verb` with `body` as `asker` over `nc` through the typed client (src/client): the request
 * stamped with the contract's version, the reply parsed with the verb's contract (a reply that
 * does not follow it throws ContractError). For tests whose verb and body are data; tests that mean
 * to send what the contract refuses (an unknown field, another version) use sendCommand itself.
 */
export function askAs(nc: NatsConnection, asker: string, verb: string, body: Record<string, unknown>, timeoutMs = 20_000): Promise<AnyReply> {
  if (!isVerb(verb)) throw new Error(`no verb "${verb}" in src/contracts/verbs.ts`);
  return meshClient(nc, asker, { timeoutMs }).ask(verb, body as RequestOf<typeof verb>);
}
