/**
 * The controller's side of the NATS services protocol (ADR-32): a thin subscriber on
 * `$SRV.<verb>`, `$SRV.<verb>.<name>` and `$SRV.<verb>.<name>.<id>` for PING, INFO and STATS,
 * answering with the pure replies of micro.ts. Each handler is total (R65): a message it cannot
 * answer is dropped with one bounded, rate-limited line. Only operators may ask (their grant,
 * src/compose/permissions.ts); the replies go to the asker's reply subject.
 */
import type { Msg, NatsConnection, Subscription } from "@nats-io/transport-node";
import { MICRO_VERBS, microSubject } from "../names.ts";
import { boundedText, dropsOf, errorLine, total } from "../bus/total.ts";
import {
  EMPTY_TALLY, infoReply, microVerbOf, pingReply, statsReply, tallied, type EndpointInfo, type EndpointTally, type MicroResponse, type ServiceIdentity,
} from "./micro.ts";

/** Each endpoint's tally, by verb, and how to add one request to it. */
export type DiscoveryTallies = {
  /** One request of `verb` answered `outcome` (`ok` or a refusal's code) after `seconds`. */
  record(verb: string, outcome: string, seconds: number): void;
  snapshot(): ReadonlyMap<string, EndpointTally>;
};

/** Tallies for `verbs` (the endpoints' verbs); a request of another verb is not kept (an asker cannot grow the map). */
export function discoveryTallies(verbs: readonly string[]): DiscoveryTallies {
  const known = new Set(verbs);
  const tallies = new Map<string, EndpointTally>();
  return {
    record(verb, outcome, seconds) {
      if (known.has(verb)) tallies.set(verb, tallied(tallies.get(verb) ?? EMPTY_TALLY, outcome, seconds));
    },
    snapshot: () => new Map(tallies),
  };
}

/** What the subscriber answers with. */
export type DiscoveryOptions = {
  identity: ServiceIdentity;
  description: string;
  endpoints: readonly EndpointInfo[];
  tallies: DiscoveryTallies;
  /** When this instance started serving. */
  started: Date;
  log: { info(line: string): void; error(line: string): void };
};

/** The reply to one monitoring request of `subject`, or null when it is not one for this instance. Pure but for the tallies' snapshot. */
function replyTo(subject: string, options: DiscoveryOptions): MicroResponse | null {
  switch (microVerbOf(subject, options.identity)) {
    case "PING": return pingReply(options.identity);
    case "INFO": return infoReply(options.identity, options.description, options.endpoints);
    case "STATS": return statsReply(options.identity, options.started, options.endpoints, options.tallies.snapshot());
    case null: return null;
  }
}

/** Subscribes the protocol's subjects for `options.identity` on `nc` and answers until `stop()`. */
export function serveDiscovery(nc: NatsConnection, options: DiscoveryOptions): { stop(): Promise<void> } {
  const { name, id } = options.identity;
  const encoder = new TextEncoder();
  const drop = dropsOf(options.log);
  const answer = total((m: Msg) => {
    const reply = replyTo(m.subject, options);
    if (reply === null) {
      drop("discovery-subject", `a message on ${boundedText(m.subject)} reached the services-protocol subscription: dropped, not a request for ${name} ${id} (R65)`);
      return;
    }
    if (!m.reply) {
      drop("discovery-no-reply", `a services-protocol request on ${boundedText(m.subject)}: dropped, no reply subject`);
      return;
    }
    m.respond(encoder.encode(JSON.stringify(reply)));
  }, (error, m) => { drop("discovery-failed", `a services-protocol request on ${boundedText(m.subject)}: dropped, ${errorLine(error)} (R65)`); });
  const subjects = MICRO_VERBS.flatMap((verb) => [microSubject(verb), microSubject(verb, name), microSubject(verb, name, id)]);
  const subscriptions: Subscription[] = subjects.map((subject) => nc.subscribe(subject, { callback: (error, m) => { if (!error) void answer(m); } }));
  return {
    async stop() {
      await Promise.all(subscriptions.filter((s) => !s.isClosed()).map((s) => s.drain().catch(() => undefined)));
    },
  };
}
