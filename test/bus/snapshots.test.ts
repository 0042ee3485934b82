import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { gunzipSync, gzipSync } from "node:zlib";
import { randomBytes } from "node:crypto";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import { Objm } from "@nats-io/obj";
import { startNatsServer, waitFor, type NatsServer } from "../support/natsServer.ts";
import { jetstreamManager } from "@nats-io/jetstream";
import { generateCommits, publishCommits, EVENT_TYPES } from "../support/history.ts";
import { openCatalogue, replay } from "../../src/records/catalogue.ts";
import { canonicalJson } from "../../src/projections/canonical.ts";
import { packState } from "../../src/projections/pack.ts";
import { SNAPSHOT_BUCKET, SNAPSHOT_OBJECTS, SNAPSHOT_POINTER_KEY, snapshotObject } from "../../src/names.ts";
import { STATE_SHAPE_VERSION, loadSnapshot, openSnapshotStores } from "../../src/records/snapshots.ts";

/** One server per describe: CATALOGUE and the snapshot stores are fixed names. */
function withServer() {
  const context = { server: undefined as unknown as NatsServer, connections: [] as NatsConnection[] };
  before(async () => { context.server = await startNatsServer(); });
  after(async () => {
    await Promise.all(context.connections.map((nc) => nc.close().catch(() => undefined)));
    await context.server?.stop();
  });
  return async () => {
    const nc = await connect({ servers: context.server.url });
    context.connections.push(nc);
    return nc;
  };
}

describe("snapshots: snapshot + tail", () => {
  const dial = withServer();

  it("R41: replay from 1 equals snapshot + tail, byte for byte, on a history of every event type, with a snapshot over 1 MiB", async () => {
    const commits = generateCommits({ seed: 41, events: 100_000, maxNodes: 5000 });
    const events = commits.reduce((sum, c) => sum + c.events.length, 0);
    assert.ok(events >= 10_000);
    assert.deepEqual(new Set(commits.flatMap((c) => c.events.map((e) => e.type))), new Set(EVENT_TYPES), "every event type");
    const middle = Math.floor((commits.length * 3) / 4);
    const nc = await dial();
    const writer = await openCatalogue(nc);
    await publishCommits(nc, commits.slice(0, middle));
    await writer.catchUp();
    const saved = await writer.snapshot();
    assert.equal(saved.sequence, middle);
    assert.ok(saved.bytes > 1024 * 1024, `the snapshot (${saved.bytes} bytes, gzipped) is over the bus's 1 MiB message limit, so it was chunked`);
    await publishCommits(nc, commits.slice(middle));

    const started = await openCatalogue(await dial());
    assert.equal(started.startedFrom, middle, "the start loaded the snapshot and folded only the tail");
    assert.equal(started.state.sequence, commits.length);
    const replayed = await replay(await dial());
    assert.equal(replayed.sequence, commits.length);
    assert.equal(canonicalJson(packState(started.state)), canonicalJson(packState(replayed)));
    const ignoring = await openCatalogue(await dial(), { useSnapshot: false });
    assert.equal(ignoring.startedFrom, 0);
    assert.equal(canonicalJson(packState(ignoring.state)), canonicalJson(packState(replayed)));
  });
});

describe("snapshots: a snapshot ahead of the records", () => {
  const dial = withServer();

  it("R41: a snapshot whose sequence is past the stream's last (an older backup restored) is not used", async () => {
    const nc = await dial();
    const writer = await openCatalogue(nc);
    await publishCommits(nc, generateCommits({ seed: 7, events: 200 }));
    await writer.catchUp();
    await writer.snapshot();
    const kv = await new Kvm(nc).open(SNAPSHOT_BUCKET);
    const pointer = (await kv.get(SNAPSHOT_POINTER_KEY))!.json<{ sequence: number; object: string; bytes: number }>();
    await kv.put(SNAPSHOT_POINTER_KEY, JSON.stringify({ ...pointer, sequence: pointer.sequence + 1000 }));
    const started = await openCatalogue(await dial());
    assert.equal(started.startedFrom, 0, "folded from sequence 1");
    assert.equal(canonicalJson(packState(started.state)), canonicalJson(packState(await replay(nc))));
  });
});

/**
 * Replaces the newest snapshot's body with `rewrite(body)` (the JSON as saved, gzipped again), under its pointer:
 * what a snapshot written by another release looks like to this one.
 */
async function rewriteSnapshot(nc: NatsConnection, rewrite: (body: Record<string, unknown>) => unknown): Promise<void> {
  const kv = await new Kvm(nc).open(SNAPSHOT_BUCKET);
  const pointer = (await kv.get(SNAPSHOT_POINTER_KEY))!.json<{ sequence: number; object: string; bytes: number }>();
  const objects = await new Objm(nc).open(SNAPSHOT_OBJECTS);
  const body = JSON.parse(gunzipSync((await objects.getBlob(pointer.object))!).toString()) as Record<string, unknown>;
  await objects.putBlob({ name: pointer.object }, gzipSync(JSON.stringify(rewrite(body))));
}

for (const [title, rewrite] of [
  ["a snapshot missing a slice (written by a release without it)", (body: Record<string, unknown>) => {
    const { sent: _dropped, ...state } = body.state as Record<string, unknown>;
    return { ...body, state };
  }],
  ["a snapshot of another shape version", (body: Record<string, unknown>) => ({ ...body, version: STATE_SHAPE_VERSION + 1 })],
  ["a snapshot of the release before versions (the state alone)", (body: Record<string, unknown>) => body.state],
] as const) {
  describe(`snapshots: ${title}`, () => {
    const dial = withServer();

    it(`R46: ${title} is ignored with one log line and the state is folded from sequence 1`, async () => {
      const nc = await dial();
      const writer = await openCatalogue(nc);
      await publishCommits(nc, generateCommits({ seed: 46, events: 300 }));
      await writer.catchUp();
      await writer.snapshot();
      await rewriteSnapshot(nc, rewrite);
      const lines: string[] = [];
      const started = await openCatalogue(await dial(), { onSnapshotIgnored: (line) => lines.push(line) });
      assert.equal(started.startedFrom, 0, "folded from sequence 1");
      assert.equal(lines.length, 1, "one log line");
      assert.equal(lines[0]!.includes("\n"), false);
      assert.equal(canonicalJson(packState(started.state)), canonicalJson(packState(await replay(nc))));
    });
  });
}

/**
 * A snapshot's body whose read cannot go on. @nats-io/obj's getBlob never settles when its consumer
 * stops delivering (the connection closed under it, or its server went away), and a controller's
 * start waiting on it hung for good: its stop too, and a standby never took over (R61).
 */
describe("snapshots: a body whose read cannot go on", () => {
  /** A pointer to a 30 MB body: tens of chunks, so the read is still going when the test cuts it. */
  const largeSnapshot = async (nc: NatsConnection) => {
    const stores = await openSnapshotStores(nc);
    const object = snapshotObject(5);
    await stores.objects.putBlob({ name: object }, randomBytes(30_000_000));
    await stores.pointers.put(SNAPSHOT_POINTER_KEY, JSON.stringify({ sequence: 5, object, bytes: 30_000_000 }));
    return stores;
  };
  /** Resolves once the object store's stream has a consumer: the body's read has begun. */
  const bodyBeingRead = async (nc: NatsConnection) => {
    const jsm = await jetstreamManager(nc);
    await waitFor(async () => (await jsm.consumers.list(`OBJ_${SNAPSHOT_OBJECTS}`).next()).length > 0, { name: "the body's read began", intervalMs: 5 });
  };
  /** How `loading` settled, or "pending" when it had not within `ms`. */
  const settledWithin = (loading: Promise<unknown>, ms: number) => Promise.race([
    loading.then(() => "resolved", (error: unknown) => `rejected: ${String(error)}`),
    new Promise<string>((resolve) => { setTimeout(() => resolve("pending"), ms).unref(); }),
  ]);

  it("R61: the connection closed during the read fails the load at once, naming the closed connection", async () => {
    const server = await startNatsServer();
    try {
      const writer = await connect({ servers: server.url });
      await largeSnapshot(writer);
      const nc = await connect({ servers: server.url });
      const loading = loadSnapshot(await openSnapshotStores(nc), 10);
      await bodyBeingRead(writer);
      await writer.close();
      await nc.close();
      const outcome = await settledWithin(loading, 10_000);
      assert.match(outcome, /^rejected: .*closed/, outcome);
    } finally {
      await server.stop();
    }
  });

  it("R61: a server gone during the read fails the load once nothing arrived for the stall limit", async () => {
    const server = await startNatsServer();
    let nc: NatsConnection | undefined;
    try {
      const writer = await connect({ servers: server.url });
      await largeSnapshot(writer);
      nc = await connect({ servers: server.url, maxReconnectAttempts: -1 });
      const loading = loadSnapshot(await openSnapshotStores(nc), 10, { stallMs: 500 });
      await bodyBeingRead(writer);
      await writer.close();
      await server.kill();
      const outcome = await settledWithin(loading, 10_000);
      assert.match(outcome, /^rejected: .*nothing arrived/, outcome);
    } finally {
      await nc?.close().catch(() => undefined);
      await server.stop().catch(() => undefined);
    }
  });
});
