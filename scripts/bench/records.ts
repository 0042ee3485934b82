/**
 * `npm run bench -- records [--events 100000,1000000] [--raw N] [--fenced N] [--json]`
 *
 * The records adapter against raw JetStream, in one run on one nats-server (file storage):
 *  - write: raw publish-with-ack rate vs fenced-append (Catalogue.transact) rate, both sequential;
 *  - read, at each history size (events, not messages): a raw ordered-consumer read + JSON.parse
 *    of every message vs replay (read, parse, zod-validate, fold), and their ratio (goal ≥ 0.8);
 *  - start, at the largest size: snapshot save, then openCatalogue from the snapshot (goal < 2 s).
 * The history is test/support/history.ts's generator: every event type, a bounded mesh.
 */
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { startNatsServer } from "../../test/support/natsServer.ts";
import { generateHistory, publishCommits } from "../../test/support/history.ts";
import { openCatalogue, replay } from "../../src/records/catalogue.ts";
import { CATALOGUE_STREAM, catalogueSubject } from "../../src/names.ts";
import type { Commit } from "../../src/events/index.ts";
import { parseCommit } from "../../src/records/decode.ts";
import { option } from "./args.ts";

const seconds = (ms: number) => Math.round(ms) / 1000;
const perSecond = (count: number, ms: number) => Math.round((count / ms) * 1000);

/**
 * Reads every message of CATALOGUE with an ordered consumer and JSON.parses it: the floor replay
 * stands on. With `validate`, also runs the Commit schema on each as a replay does (parseCommit,
 * compiled), to show what R44's validation costs alone.
 */
export async function rawRead(nc: NatsConnection, validate = false): Promise<{ messages: number; events: number; ms: number }> {
  const started = performance.now();
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  const last = (await jsm.streams.info(CATALOGUE_STREAM)).state.last_seq;
  const consumer = await jetstream(nc).consumers.get(CATALOGUE_STREAM, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: 1 });
  const messages = await consumer.consume({ max_messages: 1000 });
  let count = 0;
  let events = 0;
  for await (const m of messages) {
    const commit = JSON.parse(m.string()) as Commit;
    if (validate && !parseCommit(commit).success) throw new Error(`invalid commit at ${m.seq}`);
    events += commit.events.length;
    count += 1;
    if (m.seq >= last) break;
  }
  await messages.close();
  return { messages: count, events, ms: performance.now() - started };
}

type SizeRow = {
  events: number;
  messages: number;
  rawReadSeconds: number;
  rawReadEventsPerSecond: number;
  readParseValidateSeconds: number;
  replaySeconds: number;
  replayEventsPerSecond: number;
  foldToRawRatio: number;
};

export async function run(args: string[]): Promise<void> {
  const json = args.includes("--json");
  const sizes = (option(args, "--events") ?? "100000,1000000").split(",").map(Number).sort((a, b) => a - b);
  const rawCount = Number(option(args, "--raw") ?? 3000);
  const fencedCount = Number(option(args, "--fenced") ?? 3000);
  if (sizes.some((n) => !Number.isInteger(n) || n <= 0)) throw new Error("--events takes positive integers, comma-separated");
  const log = (line: string) => { if (!json) console.error(line); };

  const server = await startNatsServer({ config: "max_payload: 1048576" });
  const connections: NatsConnection[] = [];
  const dial = async () => {
    const nc = await connect({ servers: server.url });
    connections.push(nc);
    return nc;
  };
  try {
    const nc = await dial();
    const catalogue = await openCatalogue(nc);
    const history = generateHistory({ seed: 1, events: sizes.at(-1)! + rawCount * 3 + fencedCount * 3, maxNodes: 2000 });
    let events = 0;
    const take = (count: number): Commit[] => {
      const out: Commit[] = [];
      for (let i = 0; i < count; i += 1) {
        const next = history.next();
        if (next.done) break;
        events += next.value.events.length;
        out.push(next.value);
      }
      return out;
    };

    // 1. writes, sequential: raw publish-with-ack, then fenced appends through the catalogue.
    log(`write: ${rawCount} raw publishes, ${fencedCount} fenced appends ...`);
    const js = jetstream(nc);
    const raw = take(rawCount);
    let started = performance.now();
    for (const commit of raw) {
      await js.publish(catalogueSubject(commit.entity.kind, commit.entity.id), JSON.stringify(commit), { msgID: commit.commandId });
    }
    const rawMs = performance.now() - started;
    await catalogue.catchUp();
    const fenced = take(fencedCount);
    started = performance.now();
    for (const commit of fenced) {
      const result = await catalogue.transact(commit.commandId, () => ({ ok: true, entity: commit.entity, events: commit.events }));
      if (!result.ok || result.duplicate) throw new Error(`fenced append of ${commit.commandId} did not land`);
    }
    const fencedMs = performance.now() - started;
    const write = {
      rawPublishPerSecond: perSecond(rawCount, rawMs),
      fencedAppendPerSecond: perSecond(fencedCount, fencedMs),
      fencedToRawRatio: Math.round((rawMs / fencedMs) * 100) / 100,
    };

    // 2. reads at each size.
    const rows: SizeRow[] = [];
    for (const size of sizes) {
      log(`history: publishing up to ${size} events ...`);
      const chunk = 20_000;
      while (events < size) {
        const commits: Commit[] = [];
        while (events < size && commits.length < chunk) commits.push(...take(1));
        if (commits.length === 0) break;
        await publishCommits(nc, commits);
      }
      log(`read: raw read + parse and replay at ${events} events ...`);
      const reader = await dial();
      const rawRead1 = await rawRead(reader);
      const validated = await rawRead(reader, true);
      started = performance.now();
      const state = await replay(reader);
      const replayMs = performance.now() - started;
      const rawRate = perSecond(rawRead1.events, rawRead1.ms);
      const replayRate = perSecond(rawRead1.events, replayMs);
      rows.push({
        events: rawRead1.events,
        messages: state.sequence,
        rawReadSeconds: seconds(rawRead1.ms),
        rawReadEventsPerSecond: rawRate,
        readParseValidateSeconds: seconds(validated.ms),
        replaySeconds: seconds(replayMs),
        replayEventsPerSecond: replayRate,
        foldToRawRatio: Math.round((replayRate / rawRate) * 100) / 100,
      });
      await reader.close();
    }

    // 3. a start from a snapshot at the largest size.
    log("start: snapshot, then open from it ...");
    started = performance.now();
    const writer = await openCatalogue(await dial(), { useSnapshot: false });
    const openFullMs = performance.now() - started;
    started = performance.now();
    const saved = await writer.snapshot();
    const snapshotMs = performance.now() - started;
    started = performance.now();
    const restarted = await openCatalogue(await dial());
    const startMs = performance.now() - started;
    if (restarted.startedFrom !== saved.sequence) throw new Error("the start did not use the snapshot");
    const start = {
      events: rows.at(-1)!.events,
      snapshotBytes: saved.bytes,
      snapshotSaveSeconds: seconds(snapshotMs),
      startFromSnapshotSeconds: seconds(startMs),
      startWithoutSnapshotSeconds: seconds(openFullMs),
    };

    const result = { write, read: rows, start, goals: {
      foldAtLeast08OfRaw: rows.every((r) => r.foldToRawRatio >= 0.8),
      startFromSnapshotUnder2s: start.startFromSnapshotSeconds < 2,
    } };
    if (json) {
      console.log(JSON.stringify(result, null, 2));
      return;
    }
    console.log("\nrecords bench (one nats-server, file storage)\n");
    console.log("writes, sequential            rate/s");
    console.log(`  raw publish-with-ack      ${String(write.rawPublishPerSecond).padStart(8)}`);
    console.log(`  fenced append (transact)  ${String(write.fencedAppendPerSecond).padStart(8)}   (${write.fencedToRawRatio}x raw)`);
    console.log("\nreads      events  messages   raw read+parse       replay (validate+fold)   fold/raw   (read+parse+zod alone)");
    for (const r of rows) {
      console.log(
        `  ${String(r.events).padStart(10)} ${String(r.messages).padStart(9)}   ` +
        `${r.rawReadSeconds.toFixed(2).padStart(7)} s ${String(r.rawReadEventsPerSecond).padStart(8)}/s   ` +
        `${r.replaySeconds.toFixed(2).padStart(7)} s ${String(r.replayEventsPerSecond).padStart(8)}/s       ${r.foldToRawRatio.toFixed(2)}${r.foldToRawRatio >= 0.8 ? "" : " (goal 0.8)"}   ${r.readParseValidateSeconds.toFixed(2)} s`,
      );
    }
    console.log(`\nstart at ${start.events} events: snapshot ${(start.snapshotBytes / 1048576).toFixed(1)} MiB saved in ${start.snapshotSaveSeconds} s;`);
    console.log(`  open from snapshot ${start.startFromSnapshotSeconds} s (goal < 2 s), open folding from 1: ${start.startWithoutSnapshotSeconds} s`);
  } finally {
    await Promise.all(connections.map((c) => c.close().catch(() => undefined)));
    await server.stop();
  }
}
