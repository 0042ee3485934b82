import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { startNatsServer, type NatsServer } from "../support/natsServer.ts";
import { ensureCatalogueStream, readCommits } from "../../src/events/catalogue.ts";
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

/** A server holding `commits` commits of ~900 KiB each; `config` is added to the server's. */
function withBigRecords(commits: number, config = "") {
  const context = { server: undefined as unknown as NatsServer, nc: undefined as unknown as NatsConnection, bytes: 0 };
  before(async () => {
    context.server = await startNatsServer({ config });
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
  });
  return context;
}

describe("records: reads at scale", () => {
  let server: NatsServer;
  let nc: NatsConnection;
  const COMMITS = 90;
  let bytes = 0;

  before(async () => {
    server = await startNatsServer();
    nc = await connect({ servers: server.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    const jsm = await jetstreamManager(nc);
    await ensureCatalogueStream(jsm);
    const js = jetstream(nc);
    // ~900 KiB per commit (under the bus's 1 MiB max payload), 90 commits: ~80 MiB, past the
    // server's default per-client pending limit of 64 MiB.
    for (let i = 1; i <= COMMITS; i += 1) {
      const body = JSON.stringify(bigCommit(i, 3_900));
      bytes += body.length;
      await js.publish(catalogueSubject("push", `p${i}`), body);
    }
  });
  after(async () => {
    await nc?.close();
    await server?.stop();
  });

  it("R58: a read of commits past the server's per-client pending limit, folded slowly, completes without a slow-consumer disconnect", { timeout: 120_000 }, async () => {
    assert.ok(bytes > 64 * 1024 * 1024, `the records hold ${bytes} bytes, more than the server's 64 MiB pending limit`);
    const seen: number[] = [];
    const last = await readCommits(nc, 1, (batch) => {
      for (const { sequence } of batch) seen.push(sequence);
      busyFor(40 * batch.length);
    }, { batchSize: 1 });
    assert.equal(last, COMMITS);
    assert.deepEqual(seen, Array.from({ length: COMMITS }, (_, i) => i + 1));
    assert.doesNotMatch(server.log(), /Slow Consumer/i, "the server dropped the reader as a slow consumer");
  });
});

describe("records: a read survives losing its connection", () => {
  const COMMITS = 40;
  // A per-client pending limit far under what one read keeps in flight: the server drops the
  // reader as a slow consumer, again and again; the read must resume where it stopped each time.
  const records = withBigRecords(COMMITS, "max_pending: 4MB");

  it("R58: a slow-consumer disconnect is survived and the read completes, in order, each commit once", { timeout: 120_000 }, async () => {
    const seen: number[] = [];
    const last = await readCommits(records.nc, 1, (batch) => {
      for (const { sequence } of batch) seen.push(sequence);
      busyFor(40 * batch.length);
    }, { batchSize: 1 });
    assert.equal(last, COMMITS);
    assert.deepEqual(seen, Array.from({ length: COMMITS }, (_, i) => i + 1));
  });
});
