import type { JetStreamManager } from "@nats-io/jetstream";
import { canonicalJson } from "../../src/projections/canonical.ts";

/**
 * Every stream's and durable consumer's info (config and creation time) as canonical JSON, to
 * compare a bus before and after a raise (R21, R22: asserting twice changes nothing). Ephemeral
 * consumers are left out: readers' ordered consumers come and go with each read.
 */
export async function busObjects(jsm: JetStreamManager): Promise<string> {
  const streams: Record<string, unknown> = {};
  for await (const info of jsm.streams.list()) {
    const consumers: Record<string, unknown> = {};
    for await (const c of jsm.consumers.list(info.config.name)) {
      if (c.config.durable_name) consumers[c.name] = { created: c.created, config: c.config };
    }
    streams[info.config.name] = { created: info.created, config: info.config, consumers };
  }
  return canonicalJson(streams);
}
