import { describe, it, before, after } from "node:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import assert from "node:assert/strict";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { startNatsServer, type NatsServer } from "../support/natsServer.ts";
import { ensureCatalogueStream, readCommits, ReadInterrupted } from "../../src/records/catalogue.ts";
import type { Commit, MeshEvent } from "../../src/events/index.ts";
import { catalogueSubject } from "../../src/names.ts";

const AT = "2026-01-01T00:00:00.000Z";

/** A push's commit of `events` DeclarationSent events (about 230 bytes each, as a 10,000-node push records). */
function bigCommit(index: number, events: number): Commit {
  const list: MeshEvent[] = [];
  for (let i = 0; i < events; i += 1) {
    list.push({
      type: "DeclarationSent", actor: "controller-mesh-controller", commandId: `push-${index}`, at: AT,
      node: `node-${i}`, digest: (index % 16).toString(16).repeat(64), recordsSequence: index,
    });
  }
  return { commandId: `push-${index}`, entity: { kind: "push", id: `p${index}` }, events: list };
}

/** Blocks the event loop for `ms`: a fold that cannot keep up with the bus. */
function busyFor(ms: number): void {
  const end = Date.now() + ms;
  while (Date.now() < end) { /* a slow fold */ }
}

/**
 * A server holding `commits` commits of ~900 KiB each, started in the suite's `before` and stopped
 * in its `after`; `config` is added to the server's. With `ownStore` the store lives in `dir`, a
 * folder of the suite's own, so a test can start the server again over it (on `server.port`).
 */
function withBigRecords(commits: number, options: { config?: string; ownStore?: boolean } = {}) {
  const context = { server: undefined as unknown as NatsServer, nc: undefined as unknown as NatsConnection, bytes: 0, dir: "" };
  before(async () => {
    if (options.ownStore) context.dir = mkdtempSync(join(tmpdir(), "mesh-read-"));
    context.server = await startNatsServer({ config: options.config ?? "", ...(context.dir ? { dir: context.dir } : {}) });
    context.nc = await connect({ servers: context.server.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    const jsm = await jetstreamManager(context.nc);
    await ensureCatalogueStream(jsm);
    const js = jetstream(context.nc);
    for (let i = 1; i <= commits; i += 1) {
      const body = JSON.stringify(bigCommit(i, 3_900));
      context.bytes += body.length;
      await js.publish(catalogueSubject("push", `p${i}`), body);
    }
  });
  after(async () => {
    await context.nc?.close();
    await context.server?.stop();
    if (context.dir) rmSync(context.dir, { recursive: true, force: true });
  });
  return context;
}

describe("records: reads at scale", () => {
  const COMMITS = 90;
  // ~900 KiB per commit (under the bus's 1 MiB max payload), 90 commits: ~80 MiB, past the
  // server's default per-client pending limit of 64 MiB.
  const records = withBigRecords(COMMITS);

  it("R58: a read of commits past the server's per-client pending limit, folded slowly, completes without a slow-consumer disconnect", { timeout: 120_000 }, async () => {
    assert.ok(records.bytes > 64 * 1024 * 1024, `the records hold ${records.bytes} bytes, more than the server's 64 MiB pending limit`);
    const seen: number[] = [];
    const last = await readCommits(records.nc, 1, (batch) => {
      for (const { sequence } of batch) seen.push(sequence);
      busyFor(40 * batch.length);
    }, { batchSize: 1 });
    assert.equal(last, COMMITS);
    assert.deepEqual(seen, Array.from({ length: COMMITS }, (_, i) => i + 1));
    assert.doesNotMatch(records.server.log(), /Slow Consumer/i, "the server dropped the reader as a slow consumer");
  });
});

describe("records: small commits, then commits past the pending limit", () => {
  const SMALL = 3_000;
  const BIG = 90;
  const context = { server: undefined as unknown as NatsServer, nc: undefined as unknown as NatsConnection };
  before(async () => {
    context.server = await startNatsServer();
    context.nc = await connect({ servers: context.server.url });
    await ensureCatalogueStream(await jetstreamManager(context.nc));
    const js = jetstream(context.nc);
    const acks: Promise<unknown>[] = [];
    for (let i = 1; i <= SMALL; i += 1) acks.push(js.publish(catalogueSubject("push", `p${i}`), JSON.stringify(bigCommit(i, 1))));
    await Promise.all(acks);
    for (let i = SMALL + 1; i <= SMALL + BIG; i += 1) await js.publish(catalogueSubject("push", `p${i}`), JSON.stringify(bigCommit(i, 3_900)));
  });
  after(async () => {
    await context.nc?.close();
    await context.server?.stop();
  });

  it("R58: a read that meets larger commits than it has seen asks for fewer at a time, and is not dropped as a slow consumer", { timeout: 120_000 }, async () => {
    // The stream's average (~26 KiB) lets the read ask for hundreds of commits at once; ~900 KiB
    // each, that many would pass the server's 64 MiB pending limit unless the read narrows.
    let count = 0;
    const last = await readCommits(context.nc, 1, (batch) => {
      count += batch.length;
      busyFor(20 * batch.filter(({ commit }) => commit.events.length > 1).length);
    }, { batchSize: 1 });
    assert.equal(last, SMALL + BIG);
    assert.equal(count, SMALL + BIG);
    assert.doesNotMatch(context.server.log(), /Slow Consumer/i, "the server dropped the reader as a slow consumer");
  });
});

describe("records: a read survives losing its connection", () => {
  const COMMITS = 40;
  // A per-client pending limit far under what one read keeps in flight: the server drops the
  // reader as a slow consumer, again and again; the read must resume where it stopped each time.
  const records = withBigRecords(COMMITS, { config: "max_pending: 4MB" });

  it("R58: a slow-consumer disconnect is survived and the read completes, in order, each commit once", { timeout: 120_000 }, async () => {
    const seen: number[] = [];
    const last = await readCommits(records.nc, 1, (batch) => {
      for (const { sequence } of batch) seen.push(sequence);
      busyFor(40 * batch.length);
      // Asking for 64 MiB at a time, sixteen times what this server lets a client hold.
    }, { batchSize: 1, bytesInFlight: 64 * 1024 * 1024 });
    assert.equal(last, COMMITS);
    assert.deepEqual(seen, Array.from({ length: COMMITS }, (_, i) => i + 1));
    // The case this pins happened: the server did drop the reader at least once.
    assert.match(records.server.log(), /Slow Consumer/i);
  });
});

describe("records: a read survives a bus restart", () => {
  const COMMITS = 30;
  const records = withBigRecords(COMMITS, { ownStore: true });

  it("R58: a bus restart in the middle of a read: the read resumes on the same port and store and completes, in order, each commit once", { timeout: 120_000 }, async (t) => {
    const seen: number[] = [];
    let restart: Promise<void> | undefined;
    let backAt = 0;
    let resumedAt = 0;
    // The longest wait, once the bus was back, between the end of one fold and the next commit.
    let longestPause = 0;
    let foldedAt = 0;
    const last = await readCommits(records.nc, 1, (batch) => {
      for (const { sequence } of batch) seen.push(sequence);
      if (backAt > 0) {
        if (resumedAt === 0) resumedAt = Date.now();
        longestPause = Math.max(longestPause, Date.now() - Math.max(backAt, foldedAt));
      }
      if (restart === undefined) {
        // Stop the bus after the first commit, and start it again over the same store and port.
        restart = (async () => {
          const port = records.server.port;
          await records.server.stop();
          records.server = await startNatsServer({ dir: records.dir, port });
          backAt = Date.now();
        })();
      }
      // While the bus is away the fold keeps up, so that what was received before the stop is
      // handed over at once and the first commit after `backAt` is one read after the restart.
      if (backAt > 0 || restart === undefined) busyFor(40 * batch.length);
      foldedAt = Date.now();
    }, { batchSize: 1 });
    await restart;
    assert.equal(last, COMMITS);
    assert.deepEqual(seen, Array.from({ length: COMMITS }, (_, i) => i + 1));
    assert.ok(backAt > 0 && resumedAt > 0, "the bus went away and came back while the read was still going");
    // Measured, not asserted (no timed assertions): how long after the bus was back the read went on.
    t.diagnostic(`after the bus was back: first commit in ${resumedAt - backAt} ms, longest pause ${longestPause} ms (the client reconnects every 100 ms)`);
  });
});

describe("records: a read whose bus does not come back", () => {
  const COMMITS = 10;
  const records = withBigRecords(COMMITS);

  it("R58: a read that can hand over nothing for its stall limit raises ReadInterrupted naming the first sequence not handed over", { timeout: 60_000 }, async () => {
    const seen: number[] = [];
    let stopped: Promise<void> | undefined;
    const read = readCommits(records.nc, 1, (batch) => {
      for (const { sequence } of batch) seen.push(sequence);
      stopped ??= records.server.stop();
      busyFor(200);
      // About one commit in flight (the floor of one max payload): most are still on the bus.
    }, { batchSize: 1, stallLimitMs: 1_000, bytesInFlight: 1 });
    const error = await read.then(() => undefined, (e: unknown) => e);
    await stopped;
    assert.ok(error instanceof ReadInterrupted, `the read raised ${String(error)}`);
    // Every commit before the named sequence was handed over once, in order, and none after it.
    assert.deepEqual(seen, Array.from({ length: error.sequence - 1 }, (_, i) => i + 1));
    assert.ok(error.sequence <= COMMITS);
  });
});
