/**
 * The NATS services protocol ("micro", ADR-32), pure: the replies the controller gives to
 * `$SRV.PING`, `$SRV.INFO` and `$SRV.STATS` so standard NATS tooling (`nats micro ls`, the
 * clients' service monitors) finds it and its endpoints' statistics. The shapes are the
 * protocol's schemas (io.nats.micro.v1.*_response), snake_case keys as on the wire (STYLE.md);
 * durations are nanoseconds, as Go's time.Duration marshals them.
 *
 * The endpoints are the controller's verbs (src/contracts/verbs.ts), each on
 * commandEndpointSubject(verb) in COMMAND_QUEUE. No I/O, no clock: `started` and the tallies are
 * passed in by the subscriber (src/discovery/serve.ts).
 */
import { VERBS } from "../contracts/verbs.ts";
import { COMMAND_QUEUE, commandEndpointSubject, microSubject, MICRO_VERBS, type MicroVerb } from "../names.ts";

export const PING_RESPONSE_TYPE = "io.nats.micro.v1.ping_response";
export const INFO_RESPONSE_TYPE = "io.nats.micro.v1.info_response";
export const STATS_RESPONSE_TYPE = "io.nats.micro.v1.stats_response";

/** Who answers: the service's name (all instances share it), this instance's id, its semver and metadata. */
export type ServiceIdentity = { name: string; id: string; version: string; metadata: Record<string, string> };

/** One endpoint as `$SRV.INFO` lists it. */
export type EndpointInfo = { name: string; subject: string; queue_group: string; metadata: Record<string, string> };

/** One endpoint's statistics as `$SRV.STATS` lists them (durations in nanoseconds). */
export type EndpointStats = {
  name: string;
  subject: string;
  queue_group: string;
  num_requests: number;
  num_errors: number;
  processing_time: number;
  average_processing_time: number;
  last_error: string;
};

export type PingResponse = ServiceIdentity & { type: typeof PING_RESPONSE_TYPE };
export type InfoResponse = ServiceIdentity & { type: typeof INFO_RESPONSE_TYPE; description: string; endpoints: EndpointInfo[] };
export type StatsResponse = ServiceIdentity & { type: typeof STATS_RESPONSE_TYPE; started: string; endpoints: EndpointStats[] };
export type MicroResponse = PingResponse | InfoResponse | StatsResponse;

/** What one endpoint served so far: requests, those answered with a refusal, total nanoseconds, the last refusal's code. */
export type EndpointTally = { requests: number; errors: number; nanos: number; lastError: string };

/** A tally with nothing served. */
export const EMPTY_TALLY: EndpointTally = Object.freeze({ requests: 0, errors: 0, nanos: 0, lastError: "" });

/**
 * `tally` after one more request that took `seconds` and was answered `outcome` (`ok`, or the
 * refusal's code: counted as an error and kept as `last_error`). Pure; negative times count as 0.
 */
export function tallied(tally: EndpointTally, outcome: string, seconds: number): EndpointTally {
  const nanos = tally.nanos + Math.max(0, Math.round(seconds * 1e9));
  return outcome === "ok"
    ? { ...tally, requests: tally.requests + 1, nanos }
    : { requests: tally.requests + 1, errors: tally.errors + 1, nanos, lastError: outcome };
}

/**
 * An endpoint's name for a verb: the protocol allows letters, digits, `-` and `_` only, so the
 * dots of a verb (`node.enrol`) become `_`; the verb itself is in the endpoint's metadata.
 */
export function endpointName(verb: string): string {
  return verb.replaceAll(".", "_");
}

/** The controller's endpoints, one per verb of the registry (VERBS), sorted by verb: name, subject, queue group, metadata `{ verb, kind }`. */
export function controllerEndpoints(): EndpointInfo[] {
  return Object.entries(VERBS)
    .map(([verb, contract]) => ({
      name: endpointName(verb),
      subject: commandEndpointSubject(verb),
      queue_group: COMMAND_QUEUE,
      metadata: { verb, kind: contract.kind },
    }))
    .sort((a, b) => (a.metadata.verb < b.metadata.verb ? -1 : a.metadata.verb > b.metadata.verb ? 1 : 0));
}

/** The `$SRV.PING` reply. */
export function pingReply(identity: ServiceIdentity): PingResponse {
  return { ...identityOf(identity), type: PING_RESPONSE_TYPE };
}

/** The `$SRV.INFO` reply: the identity, a description and every endpoint. */
export function infoReply(identity: ServiceIdentity, description: string, endpoints: readonly EndpointInfo[]): InfoResponse {
  return { ...identityOf(identity), type: INFO_RESPONSE_TYPE, description, endpoints: endpoints.map((e) => ({ ...e, metadata: { ...e.metadata } })) };
}

/**
 * The `$SRV.STATS` reply: the identity, when this instance started (ISO 8601) and each endpoint's
 * statistics from `tallies` (keyed by verb, `metadata.verb`; an endpoint without one served nothing).
 */
export function statsReply(identity: ServiceIdentity, started: Date, endpoints: readonly EndpointInfo[], tallies: ReadonlyMap<string, EndpointTally>): StatsResponse {
  return {
    ...identityOf(identity),
    type: STATS_RESPONSE_TYPE,
    started: started.toISOString(),
    endpoints: endpoints.map((endpoint) => {
      const tally = tallies.get(endpoint.metadata.verb ?? endpoint.name) ?? EMPTY_TALLY;
      return {
        name: endpoint.name,
        subject: endpoint.subject,
        queue_group: endpoint.queue_group,
        num_requests: tally.requests,
        num_errors: tally.errors,
        processing_time: tally.nanos,
        average_processing_time: tally.requests === 0 ? 0 : Math.floor(tally.nanos / tally.requests),
        last_error: tally.lastError,
      };
    }),
  };
}

/**
 * Which monitoring verb `subject` asks of the instance `identity`, or null when it is not a
 * services-protocol request for it (another service's name or another instance's id).
 */
export function microVerbOf(subject: string, identity: Pick<ServiceIdentity, "name" | "id">): MicroVerb | null {
  for (const verb of MICRO_VERBS) {
    if (subject === microSubject(verb) || subject === microSubject(verb, identity.name) || subject === microSubject(verb, identity.name, identity.id)) return verb;
  }
  return null;
}

/** The identity's fields in the protocol's order, its metadata copied. */
function identityOf(identity: ServiceIdentity): ServiceIdentity {
  return { name: identity.name, id: identity.id, version: identity.version, metadata: { ...identity.metadata } };
}
