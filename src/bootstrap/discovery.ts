/**
 * The controller's discovery (issue 30): the NATS services protocol answered for
 * CONTROLLER_NAME with a fresh instance id per start, its endpoints the verbs of the registry
 * (src/discovery/micro.ts), their statistics tallied from each answered command.
 */
import { randomUUID } from "node:crypto";
import type { NatsConnection } from "@nats-io/transport-node";
import { CONTROLLER_NAME } from "../names.ts";
import { VERBS_VERSION } from "../contracts/verbs.ts";
import { packageVersion } from "../files/packageFiles.ts";
import { controllerEndpoints } from "../discovery/micro.ts";
import { discoveryTallies, serveDiscovery } from "../discovery/serve.ts";
import type { ControllerLog } from "./log.ts";

/** What the controller's own description says to `nats micro info`. */
export const CONTROLLER_DESCRIPTION = "the mesh's controller: its commands, one endpoint per verb (mesh.command.<asker>.<verb>)";

/** Serves discovery on `nc` until `stop()`; `commandDone` tallies one answered command for `$SRV.STATS`. */
export function startDiscovery(nc: NatsConnection, log: ControllerLog): { commandDone(verb: string, outcome: string, seconds: number): void; stop(): Promise<void> } {
  const endpoints = controllerEndpoints();
  const tallies = discoveryTallies(endpoints.map((e) => e.metadata.verb!));
  const identity = { name: CONTROLLER_NAME, id: randomUUID().replaceAll("-", ""), version: packageVersion(), metadata: { verbs_contract: String(VERBS_VERSION) } };
  const served = serveDiscovery(nc, { identity, description: CONTROLLER_DESCRIPTION, endpoints, tallies, started: new Date(), log });
  return { commandDone: (verb, outcome, seconds) => tallies.record(verb, outcome, seconds), stop: () => served.stop() };
}
