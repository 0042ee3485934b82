import { JetStreamApiError, type ConsumerConfig, type ConsumerInfo, type JetStreamManager, type StreamConfig, type StreamInfo } from "@nats-io/jetstream";
import type { ConsumerSpec, StreamSpec, Topology } from "../compose/topology.ts";
import type { NatsConnection } from "@nats-io/transport-node";
import { DEFAULT_JS_API_PREFIX, consumerNamesApi } from "../names.ts";

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
 * exact `mesh.declaration.<node>` to `mesh.declaration.<node>.>` when user lists began to travel in
 * parts): nats-server 2.9.10 accepts a consumer update of `filter_subject`, and reports the new
 * filter and its pending count, but keeps delivering by the old one (test/bus/raise.test.ts pins
 * it), so an in-place "fix" would leave the node silently deaf. Such a consumer is refused, named,
 * and left as it is; deleting it has it raised again (the node then receives the latest
 * declaration again, which applying twice does not change).
 */

/** One object raise did not create or change, and why (one line, names the object). */
export type RaiseRefusal = { object: string; reason: string };

/**
 * What one raise did. Objects are named `<stream>` and `<stream>/<durable>`; each list keeps
 * topology order (streams before consumers).
 */
export type RaiseReport = {
  created: string[];
  updated: string[];
  unchanged: string[];
  refused: RaiseRefusal[];
};

/** How many add/update requests raise keeps in flight at once (10,000 node consumers). */
export const RAISE_CONCURRENCY = 64;
/**
 * Above this many consumers of one stream to read (not verified by the memo), raise lists the
 * stream's consumers in pages of 256 instead of asking each one's info.
 */
export const RAISE_INFO_LIMIT = 32;

/**
 * What a controller's raises verified, kept across its raises (one per controller, for its life):
 * per stream, the `created` time of the stream seen and, per durable, the JSON of the spec's
 * config last found or made equal on the server. A later raise lists only the consumers' names
 * (one cheap request per 1,024) and reads the info of a consumer only when the memo has not
 * verified that spec: on nats-server 2.9.10 a consumer's info computes its pending count, which
 * costs about 2 ms per consumer on a CONTROL stream holding 10,000 declarations (~18 s for 10,000
 * nodes), while the names take ~70 ms. A deleted consumer or stream is still seen and raised
 * again (R21); a stream deleted and raised again (another `created`) is read in full. What a
 * memo cannot see: a consumer of a known stream changed in place by hand while the controller
 * runs; a raise without a memo (every controller start) reads and compares every consumer.
 */
export type RaiseMemo = Map<string, { created: string; verified: Map<string, string> }>;

/** An empty RaiseMemo, for a controller to keep and pass to each raise. */
export function newRaiseMemo(): RaiseMemo {
  return new Map();
}

function specKey(spec: ConsumerSpec): string {
  return JSON.stringify(spec.config);
}

function consumerObject(stream: string, durable: string): string {
  return `${stream}/${durable}`;
}

/** True when an API error is the server refusing a configuration (4xx), not a transient failure. */
function isConfigurationError(error: unknown): error is JetStreamApiError {
  return error instanceof JetStreamApiError && error.status >= 400 && error.status < 500;
}

function reasonOf(error: JetStreamApiError): string {
  const api = error.apiError();
  return `the server refused it (${api.err_code}): ${api.description}`;
}

function sameSubjects(a: readonly string[] | undefined, b: readonly string[] | undefined): boolean {
  const x = [...(a ?? [])].sort();
  const y = [...(b ?? [])].sort();
  return x.length === y.length && x.every((s, i) => s === y[i]);
}

/** Fields of `spec` that differ from the server's `config` (only the fields the spec sets). */
export function streamDifferences(spec: StreamSpec, config: StreamConfig): string[] {
  const differ: string[] = [];
  for (const key of Object.keys(spec) as Array<keyof StreamSpec>) {
    const wanted = spec[key];
    if (wanted === undefined || key === "name") continue;
    const have = (config as unknown as Record<string, unknown>)[key];
    if (key === "subjects") {
      if (!sameSubjects(spec.subjects, config.subjects)) differ.push(key);
    } else if (have !== wanted && !(typeof wanted === "boolean" && (have ?? false) === wanted)) {
      differ.push(key);
    }
  }
  return differ;
}

/** Fields of `spec.config` that differ from the server's consumer `config` (only those it sets; a missing filter is ""). */
export function consumerDifferences(spec: ConsumerSpec, config: ConsumerConfig): string[] {
  const differ: string[] = [];
  const have = config as unknown as Record<string, unknown>;
  const wanted = spec.config as Record<string, unknown>;
  if ((spec.config.filter_subject ?? "") !== (config.filter_subject ?? "")) differ.push("filter_subject");
  for (const key of Object.keys(wanted)) {
    if (key === "filter_subject" || key === "durable_name" || wanted[key] === undefined) continue;
    const value = key === "max_deliver" ? (have[key] ?? -1) : have[key];
    if (value !== wanted[key]) differ.push(key);
  }
  return differ;
}

/** Stream fields the server cannot change in place. */
const FIXED_STREAM_FIELDS = new Set(["retention", "storage"]);
/** Consumer fields the server cannot (or, before 2.10, must not) change in place. */
const FIXED_CONSUMER_FIELDS = new Set(["filter_subject", "deliver_policy", "ack_policy"]);

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
  const report: RaiseReport = { created: [], updated: [], unchanged: [], refused: [] };
  const outcome = new Map<string, "created" | "updated" | "unchanged" | RaiseRefusal>();
  const existingStreams = await listStreams(jsm);
  const streamCreated = new Map<string, string>();
  for (const [name, info] of existingStreams) streamCreated.set(name, info.created);

  // 1. Streams, before any consumer (R22).
  await inBatches(topology.streams, RAISE_CONCURRENCY, async (spec) => {
    const current = existingStreams.get(spec.name);
    try {
      if (!current) {
        streamCreated.set(spec.name, (await jsm.streams.add(toStreamConfig(spec))).created);
        outcome.set(spec.name, "created");
        return;
      }
      const differ = streamDifferences(spec, current.config);
      if (differ.length === 0) {
        outcome.set(spec.name, "unchanged");
        return;
      }
      const fixed = differ.filter((field) => FIXED_STREAM_FIELDS.has(field));
      if (fixed.length > 0) {
        outcome.set(spec.name, {
          object: spec.name,
          reason: `stream ${spec.name} exists with another ${fixed.join(" and ")} than the mesh's (${fixed.map((f) => `${String((current.config as unknown as Record<string, unknown>)[f])} ≠ ${String((spec as Record<string, unknown>)[f])}`).join(", ")}); the server cannot change that in place: move its messages and delete it to have it raised again`,
        });
        return;
      }
      await jsm.streams.update(spec.name, { ...current.config, ...toStreamConfig(spec) });
      outcome.set(spec.name, "updated");
    } catch (error) {
      if (!isConfigurationError(error)) throw error;
      outcome.set(spec.name, { object: spec.name, reason: `stream ${spec.name}: ${reasonOf(error)}` });
    }
  });

  // 2. Consumers, on the streams that exist now.
  const byStream = new Map<string, ConsumerSpec[]>();
  for (const spec of topology.consumers) {
    const list = byStream.get(spec.stream);
    if (list) list.push(spec);
    else byStream.set(spec.stream, [spec]);
  }
  // What exists: read in full without a memo; with one, the names, and the infos the memo has not verified.
  const existingConsumers = new Map<string, Map<string, ConsumerInfo>>();
  const verified = new Set<string>();
  for (const [stream, specs] of byStream) {
    const raised = outcome.get(stream);
    const exists = raised === "created" || raised === "updated" || raised === "unchanged" || (raised === undefined && existingStreams.has(stream));
    if (!exists) continue;
    if (raised === "created") {
      existingConsumers.set(stream, new Map());
      continue;
    }
    const known = memo?.get(stream);
    if (!memo || !known || known.created !== streamCreated.get(stream)) {
      existingConsumers.set(stream, await listConsumers(jsm, stream));
      continue;
    }
    const names = await consumerNames(remembered!.nc, jsm, stream);
    const toRead: string[] = [];
    for (const spec of specs) {
      const durable = spec.config.durable_name;
      if (!names.has(durable)) continue;
      if (known.verified.get(durable) === specKey(spec)) verified.add(consumerObject(stream, durable));
      else toRead.push(durable);
    }
    existingConsumers.set(stream, toRead.length > RAISE_INFO_LIMIT ? await listConsumers(jsm, stream) : await consumerInfos(jsm, stream, toRead));
  }
  await inBatches(topology.consumers, RAISE_CONCURRENCY, async (spec) => {
    const name = consumerObject(spec.stream, spec.config.durable_name);
    const consumers = existingConsumers.get(spec.stream);
    if (!consumers) {
      outcome.set(name, { object: name, reason: `consumer ${spec.config.durable_name} needs stream ${spec.stream}, which does not exist and could not be raised` });
      return;
    }
    if (verified.has(name)) {
      outcome.set(name, "unchanged");
      return;
    }
    const current = consumers.get(spec.config.durable_name);
    try {
      if (!current) {
        await jsm.consumers.add(spec.stream, toConsumerConfig(spec));
        outcome.set(name, "created");
        return;
      }
      const differ = consumerDifferences(spec, current.config);
      if (differ.length === 0) {
        outcome.set(name, "unchanged");
        return;
      }
      const fixed = differ.filter((field) => FIXED_CONSUMER_FIELDS.has(field));
      if (fixed.length > 0) {
        const have = current.config as unknown as Record<string, unknown>;
        const want = spec.config as Record<string, unknown>;
        outcome.set(name, {
          object: name,
          reason: `consumer ${spec.config.durable_name} on ${spec.stream} exists with another ${fixed.map((f) => `${f} (${JSON.stringify(have[f] ?? "")}, the mesh wants ${JSON.stringify(want[f] ?? "")})`).join(", ")}: left as it is; delete it to have it raised again`,
        });
        return;
      }
      const delta: Partial<ConsumerConfig> = {};
      for (const field of differ) (delta as Record<string, unknown>)[field] = (spec.config as Record<string, unknown>)[field];
      await jsm.consumers.update(spec.stream, spec.config.durable_name, delta);
      outcome.set(name, "updated");
    } catch (error) {
      if (!isConfigurationError(error)) throw error;
      outcome.set(name, { object: name, reason: `consumer ${spec.config.durable_name} on ${spec.stream}: ${reasonOf(error)}` });
    }
  });

  if (memo) rememberRaise(memo, topology, outcome, streamCreated);

  const objects = [
    ...topology.streams.map((s) => s.name),
    ...topology.consumers.map((c) => consumerObject(c.stream, c.config.durable_name)),
  ];
  for (const object of objects) {
    const done = outcome.get(object);
    if (done === undefined) continue;
    if (typeof done === "string") report[done].push(object);
    else report.refused.push(done);
  }
  return report;
}

/** Keeps in `memo` the consumers this raise found or made equal to their spec; forgets the others. */
function rememberRaise(
  memo: RaiseMemo,
  topology: Topology,
  outcome: ReadonlyMap<string, "created" | "updated" | "unchanged" | RaiseRefusal>,
  streamCreated: ReadonlyMap<string, string>,
): void {
  for (const spec of topology.consumers) {
    const created = streamCreated.get(spec.stream);
    if (created === undefined) {
      memo.delete(spec.stream);
      continue;
    }
    let known = memo.get(spec.stream);
    if (!known || known.created !== created) {
      known = { created, verified: new Map() };
      memo.set(spec.stream, known);
    }
    const done = outcome.get(consumerObject(spec.stream, spec.config.durable_name));
    if (typeof done === "string") known.verified.set(spec.config.durable_name, specKey(spec));
    else known.verified.delete(spec.config.durable_name);
  }
}

function toStreamConfig(spec: StreamSpec): Partial<StreamConfig> & { name: string } {
  return { ...spec, subjects: [...spec.subjects] } as Partial<StreamConfig> & { name: string };
}

function toConsumerConfig(spec: ConsumerSpec): Partial<ConsumerConfig> {
  return { ...spec.config } as Partial<ConsumerConfig>;
}

/** One line summing up a raise, for the log: counts, and each refusal's object. */
export function describeRaise(report: RaiseReport): string {
  const parts = [`${report.created.length} created`, `${report.updated.length} updated`, `${report.unchanged.length} unchanged`];
  if (report.refused.length > 0) parts.push(`${report.refused.length} refused (${report.refused.map((r) => r.object).join(", ")})`);
  return parts.join(", ");
}
