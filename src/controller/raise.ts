import { JetStreamApiError, type ConsumerConfig, type ConsumerInfo, type JetStreamManager, type StreamConfig, type StreamInfo } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { ConsumerSpec, StreamSpec, Topology } from "../compose/topology.ts";
import { DEFAULT_JS_API_PREFIX, consumerNamesApi } from "../names.ts";
import type { ComposeConfig } from "../compose/types.ts";
import type { State } from "../projections/index.ts";
import { retryJetStream, type RetryJetStreamOptions } from "../bus/retry.ts";
import {
  consumerObject, consumerReading, consumersToRead, missingStreamRefusal, planConsumer, planStream, raiseReportOf, rememberRaise,
  wantedTopology, type RaiseMemo, type RaiseOutcome, type RaiseReport,
} from "./planRaise.ts";

export {
  RAISE_INFO_LIMIT, consumerDifferences, describeRaise, newRaiseMemo, streamDifferences,
  type RaiseMemo, type RaiseRefusal, type RaiseReport,
} from "./planRaise.ts";

/**
 * Raising the bus (R5, R16, R21, R22): asserts every stream and consumer composeTopology names,
 * streams first, then consumers. Only the fields the mesh owns (the ones the spec sets) are
 * compared, so a second raise over a raised bus makes no add or update call at all.
 *
 * Never rewrites by accident: before 2.10 adding an existing durable with another filter silently
 * rewrites it, so consumers are read first, and a difference the server cannot change in place
 * (a consumer's filter, deliver or ack policy; a stream's retention or storage) is refused and
 * reported, never "fixed". A configuration the server refuses (a work-queue stream's overlapping or
 * unfiltered second consumer, a pull consumer without explicit acks) is a configuration error:
 * reported with the server's reason, not retried.
 *
 * Filters stay fixed even for the mesh's own CONTROL node consumers (whose filter moved from the
 * exact declarationSubject(node) to declarationFilter(node), the subject and its parts, when user lists began to travel in
 * parts): nats-server 2.9.10 accepts a consumer update of `filter_subject`, and reports the new
 * filter and its pending count, but keeps delivering by the old one (test/bus/raise.test.ts pins
 * it), so an in-place "fix" would leave the node silently deaf. Such a consumer is refused, named,
 * and left as it is; deleting it has it raised again (the node then receives the latest
 * declaration again, which applying twice does not change).
 *
 * What to do about each object is planned in planRaise.ts (pure, unit-tested); this file reads the
 * server, carries the plan out and classifies the server's errors.
 */

/** How many add/update requests raise keeps in flight at once (10,000 node consumers). */
export const RAISE_CONCURRENCY = 64;

/** True when an API error is the server refusing a configuration (4xx), not a transient failure. */
function isConfigurationError(error: unknown): error is JetStreamApiError {
  return error instanceof JetStreamApiError && error.status >= 400 && error.status < 500;
}

function reasonOf(error: JetStreamApiError): string {
  const api = error.apiError();
  return `the server refused it (${api.err_code}): ${api.description}`;
}

async function inBatches<T>(items: readonly T[], limit: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next]!;
      next += 1;
      await task(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

async function listStreams(jsm: JetStreamManager): Promise<Map<string, StreamInfo>> {
  const found = new Map<string, StreamInfo>();
  for await (const info of jsm.streams.list()) found.set(info.config.name, info);
  return found;
}

/** The names of a stream's consumers ($JS.API.CONSUMER.NAMES, paged by the server), without their infos. */
async function consumerNames(nc: NatsConnection, jsm: JetStreamManager, stream: string): Promise<Set<string>> {
  const subject = consumerNamesApi(jsm.getOptions().apiPrefix ?? DEFAULT_JS_API_PREFIX, stream);
  const names = new Set<string>();
  for (let offset = 0; ;) {
    const reply = (await nc.request(subject, JSON.stringify({ offset }), { timeout: jsm.getOptions().timeout ?? 5_000 })).json<{
      consumers?: string[] | null; total?: number; error?: { code: number; err_code?: number; description: string };
    }>();
    // As the client's own calls do: a typed API error, so a 503 (JetStream not enabled for a moment) reads as transient.
    if (reply.error) throw new JetStreamApiError({ code: reply.error.code, err_code: reply.error.err_code ?? 0, description: `listing the consumers of ${stream} failed: ${reply.error.description}` });
    const page = reply.consumers ?? [];
    for (const name of page) names.add(name);
    offset += page.length;
    if (page.length === 0 || offset >= (reply.total ?? 0)) return names;
  }
}

/** The infos of `durables` of `stream` (bounded concurrency); one that does not exist is left out. */
async function consumerInfos(jsm: JetStreamManager, stream: string, durables: readonly string[]): Promise<Map<string, ConsumerInfo>> {
  const found = new Map<string, ConsumerInfo>();
  await inBatches(durables, RAISE_CONCURRENCY, async (durable) => {
    try {
      found.set(durable, await jsm.consumers.info(stream, durable));
    } catch (error) {
      if (!(error instanceof JetStreamApiError && error.status === 404)) throw error;
    }
  });
  return found;
}

async function listConsumers(jsm: JetStreamManager, stream: string): Promise<Map<string, ConsumerInfo>> {
  const found = new Map<string, ConsumerInfo>();
  for await (const info of jsm.consumers.list(stream)) found.set(info.name, info);
  return found;
}

/**
 * Raises `topology` on the bus: every stream (added when missing, updated when a field the mesh owns
 * differs and can change in place), then every consumer of the streams that exist (added when
 * missing, updated likewise). Existing objects are read by listing (one paged request per 256), so
 * asserting a raised bus is cheap and changes nothing. Returns what was created, updated, left
 * alone and refused (see the module comment). With `remembered` (a RaiseMemo the caller keeps across
 * raises, and the connection `jsm` uses, to list names), the consumers an earlier raise verified are only checked to exist (their names), and
 * the memo is brought up to date. A consumer whose stream could not be raised is
 * refused naming the stream (R22). Throws only for transient failures (timeouts, no JetStream),
 * which the caller may retry; configuration errors are in `refused`.
 */
export async function raiseTopology(
  jsm: JetStreamManager,
  topology: Topology,
  remembered?: { memo: RaiseMemo; nc: NatsConnection },
): Promise<RaiseReport> {
  const memo = remembered?.memo;
  const outcome = new Map<string, RaiseOutcome>();
  const existingStreams = await listStreams(jsm);
  const streamCreated = new Map<string, string>();
  for (const [name, info] of existingStreams) streamCreated.set(name, info.created);
  // 1. Streams, before any consumer (R22).
  await inBatches(topology.streams, RAISE_CONCURRENCY, (spec) => raiseStream(jsm, spec, existingStreams.get(spec.name), outcome, streamCreated));
  // 2. Consumers, on the streams that exist now.
  const existing = await readConsumers(jsm, topology, { outcome, existingStreams, streamCreated }, remembered);
  await inBatches(topology.consumers, RAISE_CONCURRENCY, (spec) => raiseConsumer(jsm, spec, existing, outcome));
  if (memo) rememberRaise(memo, topology, outcome, streamCreated);
  return raiseReportOf(topology, outcome);
}

/** One stream raised as planStream says; its outcome set (a configuration error is a refusal), its creation time kept when added. */
async function raiseStream(jsm: JetStreamManager, spec: StreamSpec, current: StreamInfo | undefined, outcome: Map<string, RaiseOutcome>, streamCreated: Map<string, string>): Promise<void> {
  const plan = planStream(spec, current?.config);
  try {
    switch (plan.kind) {
      case "add":
        streamCreated.set(spec.name, (await jsm.streams.add(toStreamConfig(spec))).created);
        outcome.set(spec.name, "created");
        return;
      case "unchanged":
        outcome.set(spec.name, "unchanged");
        return;
      case "refuse":
        outcome.set(spec.name, plan.refusal);
        return;
      case "update":
        await jsm.streams.update(spec.name, { ...current!.config, ...toStreamConfig(spec) });
        outcome.set(spec.name, "updated");
        return;
    }
  } catch (error) {
    if (!isConfigurationError(error)) throw error;
    outcome.set(spec.name, { object: spec.name, reason: `stream ${spec.name}: ${reasonOf(error)}` });
  }
}

/** The consumers that exist, by stream (none for a stream not raised), and those a memo already verified (`verified`, object names). */
type ExistingConsumers = { byStream: Map<string, Map<string, ConsumerInfo>>; verified: Set<string> };

/**
 * What exists of the consumers `topology` wants: read in full without a memo; with one, the
 * names, and the infos the memo has not verified (consumerReading, consumersToRead).
 */
async function readConsumers(
  jsm: JetStreamManager,
  topology: Topology,
  streams: { outcome: Map<string, RaiseOutcome>; existingStreams: Map<string, StreamInfo>; streamCreated: Map<string, string> },
  remembered: { memo: RaiseMemo; nc: NatsConnection } | undefined,
): Promise<ExistingConsumers> {
  const memo = remembered?.memo;
  const wanted = new Map<string, ConsumerSpec[]>();
  for (const spec of topology.consumers) {
    const list = wanted.get(spec.stream);
    if (list) list.push(spec);
    else wanted.set(spec.stream, [spec]);
  }
  const byStream = new Map<string, Map<string, ConsumerInfo>>();
  const verified = new Set<string>();
  for (const [stream, specs] of wanted) {
    const known = memo?.get(stream);
    switch (consumerReading(streams.outcome.get(stream), streams.existingStreams.has(stream), memo ? known : undefined, streams.streamCreated.get(stream))) {
      case "skip":
        break;
      case "none":
        byStream.set(stream, new Map());
        break;
      case "list":
        byStream.set(stream, await listConsumers(jsm, stream));
        break;
      case "names": {
        const reading = consumersToRead(specs, await consumerNames(remembered!.nc, jsm, stream), known!);
        for (const object of reading.verified) verified.add(object);
        byStream.set(stream, reading.listAll ? await listConsumers(jsm, stream) : await consumerInfos(jsm, stream, reading.toRead));
        break;
      }
    }
  }
  return { byStream, verified };
}

/** One consumer raised as planConsumer says; refused naming its stream when that does not exist (R22); its outcome set. */
async function raiseConsumer(jsm: JetStreamManager, spec: ConsumerSpec, existing: ExistingConsumers, outcome: Map<string, RaiseOutcome>): Promise<void> {
  const name = consumerObject(spec.stream, spec.config.durable_name);
  const consumers = existing.byStream.get(spec.stream);
  if (!consumers) {
    outcome.set(name, missingStreamRefusal(spec));
    return;
  }
  if (existing.verified.has(name)) {
    outcome.set(name, "unchanged");
    return;
  }
  const plan = planConsumer(spec, consumers.get(spec.config.durable_name)?.config);
  try {
    switch (plan.kind) {
      case "add":
        await jsm.consumers.add(spec.stream, toConsumerConfig(spec));
        outcome.set(name, "created");
        return;
      case "unchanged":
        outcome.set(name, "unchanged");
        return;
      case "refuse":
        outcome.set(name, plan.refusal);
        return;
      case "update":
        await jsm.consumers.update(spec.stream, spec.config.durable_name, plan.delta as Partial<ConsumerConfig>);
        outcome.set(name, "updated");
        return;
    }
  } catch (error) {
    if (!isConfigurationError(error)) throw error;
    outcome.set(name, { object: name, reason: `consumer ${spec.config.durable_name} on ${spec.stream}: ${reasonOf(error)}` });
  }
}

/**
 * Raises what the records imply (R5, R21): composeTopology's streams and consumers plus the
 * REPORTS stream. Returns raiseTopology's report; `remembered` as raiseTopology's (the controller keeps a memo).
 * A raise is an assertion, safe to run again, so a moment of JetStream unavailability (no
 * responders, not enabled, a timeout: a bus under load or reloading) is retried (retryJetStream);
 * throws JetStreamUnavailable once the bound is spent, before anything of the push is recorded.
 */
export async function raiseMesh(
  jsm: JetStreamManager,
  state: State,
  compose: ComposeConfig,
  remembered?: { memo: RaiseMemo; nc: NatsConnection },
  retry?: RetryJetStreamOptions,
): Promise<RaiseReport> {
  const wanted = wantedTopology(state, compose);
  return retryJetStream("raising the mesh's streams and consumers", () => raiseTopology(jsm, wanted, remembered), retry);
}

function toStreamConfig(spec: StreamSpec): Partial<StreamConfig> & { name: string } {
  return { ...spec, subjects: [...spec.subjects] } as Partial<StreamConfig> & { name: string };
}

function toConsumerConfig(spec: ConsumerSpec): Partial<ConsumerConfig> {
  return { ...spec.config } as Partial<ConsumerConfig>;
}

