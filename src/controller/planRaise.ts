/**
 * What a raise does, apart from doing it (issue 12): for each stream and consumer of the topology,
 * add it, leave it, update it, or refuse to touch it (and why); which consumers to read before; the
 * report; what the memo keeps. Pure: no bus. raise.ts reads the server, carries the plan out and
 * hands the outcomes back. Server configurations are read as plain objects (the fields the mesh's
 * specs set), so this file needs no client types.
 */
import { composeTopology, type ConsumerSpec, type StreamSpec, type Topology } from "../compose/topology.ts";
import type { ComposeConfig } from "../compose/types.ts";
import type { State } from "../projections/index.ts";
import { CATALOGUE_STREAM, REPORTS_STREAM, REPORT_SUBJECTS } from "../names.ts";

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

export function specKey(spec: ConsumerSpec): string {
  return JSON.stringify(spec.config);
}

export function consumerObject(stream: string, durable: string): string {
  return `${stream}/${durable}`;
}

function sameSubjects(a: readonly string[] | undefined, b: readonly string[] | undefined): boolean {
  const x = [...(a ?? [])].sort();
  const y = [...(b ?? [])].sort();
  return x.length === y.length && x.every((s, i) => s === y[i]);
}

/** Fields of `spec` that differ from the server's `config` (only the fields the spec sets). */
export function streamDifferences(spec: StreamSpec, server: object): string[] {
  const config = server as { subjects?: readonly string[] } & Record<string, unknown>;
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
export function consumerDifferences(spec: ConsumerSpec, server: object): string[] {
  const config = server as { filter_subject?: string } & Record<string, unknown>;
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

/** Keeps in `memo` the consumers this raise found or made equal to their spec; forgets the others. */
export function rememberRaise(
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

/** One line summing up a raise, for the log: counts, and each refusal's object. */
export function describeRaise(report: RaiseReport): string {
  const parts = [`${report.created.length} created`, `${report.updated.length} updated`, `${report.unchanged.length} unchanged`];
  if (report.refused.length > 0) parts.push(`${report.refused.length} refused (${report.refused.map((r) => r.object).join(", ")})`);
  return parts.join(", ");
}

/** What happened to one object of a raise: done (created, updated, unchanged) or refused. */
export type RaiseOutcome = "created" | "updated" | "unchanged" | RaiseRefusal;

/**
 * What to do about one stream, given the server's config of it (undefined when it does not exist):
 * add it; leave it (every field the mesh sets agrees); update it in place; or refuse, naming the
 * fields the server cannot change in place (retention, storage) and what to do. CATALOGUE is never
 * updated (R47): no mesh credential may change the records' configuration (the bus refuses it,
 * CATALOGUE_ERASE_SUBJECTS), so any difference is refused, naming the fields.
 */
export function planStream(spec: StreamSpec, current: object | undefined): { kind: "add" | "unchanged" | "update" } | { kind: "refuse"; refusal: RaiseRefusal } {
  if (!current) return { kind: "add" };
  const differ = streamDifferences(spec, current);
  if (differ.length === 0) return { kind: "unchanged" };
  const have = current as Record<string, unknown>;
  const want = spec as Record<string, unknown>;
  const values = (fields: readonly string[]) => fields.map((f) => `${String(have[f])} ≠ ${String(want[f])}`).join(", ");
  if (spec.name === CATALOGUE_STREAM) {
    return {
      kind: "refuse",
      refusal: {
        object: spec.name,
        reason: `stream ${spec.name} exists with another ${differ.join(" and ")} than the mesh's (${values(differ)}); the records' configuration is fixed when genesis creates them and no mesh credential may change it (R47): set the controller's configuration to match (MESH_CATALOGUE_REPLICAS for num_replicas), or change the stream as a bus user outside the mesh's list`,
      },
    };
  }
  const fixed = differ.filter((field) => FIXED_STREAM_FIELDS.has(field));
  if (fixed.length === 0) return { kind: "update" };
  return {
    kind: "refuse",
    refusal: {
      object: spec.name,
      reason: `stream ${spec.name} exists with another ${fixed.join(" and ")} than the mesh's (${values(fixed)}); the server cannot change that in place: move its messages and delete it to have it raised again`,
    },
  };
}

/**
 * What to do about one consumer, given the server's config of it (undefined when it does not
 * exist): add it; leave it; update the differing fields in place (`delta`); or refuse, naming the
 * fields that must not change in place (filter, deliver and ack policy: see raise.ts) and what to do.
 */
export function planConsumer(
  spec: ConsumerSpec,
  current: object | undefined,
): { kind: "add" | "unchanged" } | { kind: "update"; delta: Record<string, unknown> } | { kind: "refuse"; refusal: RaiseRefusal } {
  if (!current) return { kind: "add" };
  const differ = consumerDifferences(spec, current);
  if (differ.length === 0) return { kind: "unchanged" };
  const fixed = differ.filter((field) => FIXED_CONSUMER_FIELDS.has(field));
  const have = current as Record<string, unknown>;
  const want = spec.config as Record<string, unknown>;
  if (fixed.length > 0) {
    const name = consumerObject(spec.stream, spec.config.durable_name);
    return {
      kind: "refuse",
      refusal: {
        object: name,
        reason: `consumer ${spec.config.durable_name} on ${spec.stream} exists with another ${fixed.map((f) => `${f} (${JSON.stringify(have[f] ?? "")}, the mesh wants ${JSON.stringify(want[f] ?? "")})`).join(", ")}: left as it is; delete it to have it raised again`,
      },
    };
  }
  const delta: Record<string, unknown> = {};
  for (const field of differ) delta[field] = want[field];
  return { kind: "update", delta };
}

/** R22: the refusal of a consumer whose stream does not exist and could not be raised. */
export function missingStreamRefusal(spec: ConsumerSpec): RaiseRefusal {
  const name = consumerObject(spec.stream, spec.config.durable_name);
  return { object: name, reason: `consumer ${spec.config.durable_name} needs stream ${spec.stream}, which does not exist and could not be raised` };
}

/**
 * How to learn a stream's consumers before raising them: `skip` when the stream does not exist
 * (its consumers are refused, R22); `none` when this raise created it (it has none); `list` (read
 * every consumer's info) without a memo or when the memo does not know this stream as it is now
 * (another `created`); `names` (list the names, read only what the memo has not verified).
 */
export function consumerReading(
  raised: RaiseOutcome | undefined,
  existedBefore: boolean,
  known: { created: string } | undefined,
  created: string | undefined,
): "skip" | "none" | "list" | "names" {
  const exists = raised === "created" || raised === "updated" || raised === "unchanged" || (raised === undefined && existedBefore);
  if (!exists) return "skip";
  if (raised === "created") return "none";
  return !known || known.created !== created ? "list" : "names";
}

/**
 * Given the names of a stream's consumers, which of `specs` the memo already verified (object
 * names: left unchanged without a read) and which durables to read; `listAll` when more than
 * RAISE_INFO_LIMIT are to be read (listing them in pages is cheaper than one info each).
 */
export function consumersToRead(
  specs: readonly ConsumerSpec[],
  names: ReadonlySet<string>,
  known: { verified: ReadonlyMap<string, string> },
): { verified: string[]; toRead: string[]; listAll: boolean } {
  const verified: string[] = [];
  const toRead: string[] = [];
  for (const spec of specs) {
    const durable = spec.config.durable_name;
    if (!names.has(durable)) continue;
    if (known.verified.get(durable) === specKey(spec)) verified.push(consumerObject(spec.stream, durable));
    else toRead.push(durable);
  }
  return { verified, toRead, listAll: toRead.length > RAISE_INFO_LIMIT };
}

/** The raise's report: each object of `topology` by its outcome, in topology order (streams, then consumers). */
export function raiseReportOf(topology: Topology, outcome: ReadonlyMap<string, RaiseOutcome>): RaiseReport {
  const report: RaiseReport = { created: [], updated: [], unchanged: [], refused: [] };
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

/** The REPORTS stream: each node's latest report, kept so a wait survives a reconnect. */
export function reportsStreamSpec(replicas: number): StreamSpec {
  return {
    name: REPORTS_STREAM, subjects: [REPORT_SUBJECTS], retention: "limits", storage: "file",
    num_replicas: replicas, deny_delete: false, deny_purge: false, max_msgs_per_subject: 1,
  };
}

/** What a raise asserts (R5, R21): composeTopology's streams and consumers, plus the REPORTS stream. */
export function wantedTopology(state: State, compose: ComposeConfig): Topology {
  const topology = composeTopology(state, compose);
  return { ...topology, streams: [...topology.streams, reportsStreamSpec(compose.replicas ?? 1)] };
}
