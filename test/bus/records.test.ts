import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { startNatsServer, waitFor, type NatsServer } from "../support/natsServer.ts";
import { openCatalogue, readCommits, replay, InvalidEvent, type Catalogue } from "../../src/records/catalogue.ts";
import type { Commit, MeshEvent } from "../../src/events/index.ts";
import type { Decision } from "../../src/commands/envelope.ts";
import type { SequencedCommit, State } from "../../src/projections/index.ts";
import { CATALOGUE_STREAM, catalogueSubject } from "../../src/names.ts";

const AT = "2026-01-01T00:00:00.000Z";
const DIGEST = "a".repeat(64);

/** A decide that sends `node` a declaration, counting its calls and the sequences it saw. */
function sending(node: string, commandId: string, seen: number[] = []): (state: State) => Decision {
  return (state) => {
    seen.push(state.sequence);
    const event: MeshEvent = { type: "DeclarationSent", actor: "operator-test", commandId, at: AT, node, digest: DIGEST, recordsSequence: state.sequence };
    return { ok: true, entity: { kind: "node", id: node }, events: [event] };
  };
}

/** Every commit in the stream, validated. */
async function allCommits(nc: NatsConnection): Promise<SequencedCommit[]> {
  const all: SequencedCommit[] = [];
  await readCommits(nc, 1, (batch) => { all.push(...batch); });
  return all;
}

async function streamLast(nc: NatsConnection): Promise<number> {
  return (await (await jetstreamManager(nc)).streams.info(CATALOGUE_STREAM)).state.last_seq;
}

/** One server per describe: CATALOGUE is a fixed name, never shared by two tests on one server. */
function withServer(options: Parameters<typeof startNatsServer>[0] = {}) {
  const context = { server: undefined as unknown as NatsServer, connections: [] as NatsConnection[] };
  before(async () => { context.server = await startNatsServer(options); });
  after(async () => {
    await Promise.all(context.connections.map((nc) => nc.close().catch(() => undefined)));
    await context.server?.stop();
  });
  const dial = async () => {
    const nc = await connect({ servers: context.server.url });
    context.connections.push(nc);
    return nc;
  };
  return { context, dial };
}

describe("records: fenced appends", () => {
  const { dial } = withServer();

  it("R40: two writers appending from the same folded sequence, 200 rounds: one wins, the loser catches up and lands", async () => {
    const [ncA, ncB] = [await dial(), await dial()];
    const a = await openCatalogue(ncA);
    const b = await openCatalogue(ncB);
    const first = await a.transact("genesis", sending("alpha", "genesis"));
    assert.equal(first.ok && first.sequence, 1);
    const expected = new Set<string>(["genesis"]);
    for (let round = 0; round < 200; round += 1) {
      await Promise.all([a.catchUp(), b.catchUp()]);
      const fence = a.state.sequence;
      assert.equal(b.state.sequence, fence, "both writers start the round from the same folded sequence");
      const idA = `a-${round}`;
      const idB = `b-${round}`;
      const seenA: number[] = [];
      const seenB: number[] = [];
      const [resultA, resultB] = await Promise.all([
        a.transact(idA, sending("alpha", idA, seenA)),
        b.transact(idB, sending("beta", idB, seenB)),
      ]);
      assert.ok(resultA.ok && !resultA.duplicate && resultB.ok && !resultB.duplicate);
      const sequences = [resultA.sequence, resultB.sequence].sort((x, y) => x - y);
      assert.deepEqual(sequences, [fence + 1, fence + 2], "the two commits land one after the other");
      // Exactly one won at the fence; the loser was refused once, caught up and decided again.
      const [winnerSeen, loserSeen] = resultA.sequence === fence + 1 ? [seenA, seenB] : [seenB, seenA];
      assert.deepEqual(winnerSeen, [fence]);
      assert.deepEqual(loserSeen, [fence, fence + 1]);
      expected.add(idA).add(idB);
    }
    const commits = await allCommits(ncA);
    assert.equal(commits.length, expected.size, "no lost and no doubled commit");
    assert.deepEqual(new Set(commits.map((c) => c.commit.commandId)), expected);
    assert.equal(new Set(commits.map((c) => c.commit.commandId)).size, commits.length);
    const replayed = await replay(ncA);
    await Promise.all([a.catchUp(), b.catchUp()]);
    assert.deepEqual(replayed, a.state);
    assert.deepEqual(replayed, b.state);
  });
});

describe("records: a command id appended twice", () => {
  const { dial } = withServer();

  it("R40: yields one commit, and the second call learns it was a duplicate (same writer and a stale one)", async () => {
    const [ncA, ncB] = [await dial(), await dial()];
    const a = await openCatalogue(ncA);
    const b = await openCatalogue(ncB); // opened before the commit: stale
    const once = await a.transact("enrol-1", sending("alpha", "enrol-1"));
    assert.ok(once.ok && !once.duplicate);
    let decided = 0;
    const again = await a.transact("enrol-1", () => { decided += 1; return { ok: false, refusal: { code: "must-not-run", message: "" } }; });
    assert.ok(again.ok && again.duplicate);
    assert.equal(decided, 0, "a known command id is not decided again");
    assert.equal(again.sequence, once.sequence);
    assert.deepEqual(again.events, once.events, "the original commit's events, read back from the records");
    const stale = await b.transact("enrol-1", sending("alpha", "enrol-1"));
    assert.ok(stale.ok && stale.duplicate, "a stale writer learns it was a duplicate");
    assert.equal(stale.sequence, once.sequence);
    assert.equal(await streamLast(ncA), 1, "one commit in the records");
  });
});

describe("records: refusals and invalid commits", () => {
  const { dial } = withServer();

  it("a refusal appends nothing, and events that fail their schema throw InvalidEvent before writing", async () => {
    const nc = await dial();
    const catalogue = await openCatalogue(nc);
    const before = await streamLast(nc);
    const refused = await catalogue.transact("refused-1", () => ({ ok: false, refusal: { code: "hub-exists", message: "no" } }));
    assert.deepEqual(refused, { ok: false, refusal: { code: "hub-exists", message: "no" } });
    await assert.rejects(
      catalogue.transact("bad-1", () => ({ ok: true, entity: { kind: "node", id: "alpha" }, events: [{ type: "NodeRemoved", actor: "x", commandId: "bad-1", at: "yesterday", node: "alpha" }] })),
      (error: unknown) => error instanceof InvalidEvent && error.sequence === 0,
    );
    assert.equal(await streamLast(nc), before, "nothing appended");
  });
});

describe("records: idempotency after the dedupe window", () => {
  const { dial } = withServer();

  it("R40: a command id retried after the stream's dedupe window is still answered as a duplicate, from the records", async () => {
    const [ncA, ncB] = [await dial(), await dial()];
    const a = await openCatalogue(ncA, { duplicateWindowMs: 500 });
    const b = await openCatalogue(ncB, { duplicateWindowMs: 500 }); // stale from here on
    const once = await a.transact("issue-1", sending("alpha", "issue-1"));
    assert.ok(once.ok && !once.duplicate);
    // A probe commit appended after it: once the server accepts the probe's id again, the window
    // of the first commit has passed too (duplicates do not refresh the window).
    const js = jetstream(ncA);
    const probe: Commit = { commandId: "probe", entity: { kind: "node", id: "probe" }, events: [{ type: "NodeRemoved", actor: "operator-test", commandId: "probe", at: AT, node: "probe" }] };
    const publishProbe = () => js.publish(catalogueSubject("node", "probe"), JSON.stringify(probe), { msgID: "probe" });
    await publishProbe();
    await waitFor(async () => !(await publishProbe()).duplicate, { timeoutMs: 10_000, intervalMs: 100, name: "the dedupe window to pass" });
    const lastBefore = await streamLast(ncA);
    const stale = await b.transact("issue-1", sending("alpha", "issue-1"));
    assert.ok(stale.ok && stale.duplicate, "the records' applied map catches what the bus no longer does");
    assert.equal(stale.sequence, once.sequence);
    const fresh = await openCatalogue(await dial(), { useSnapshot: false });
    const again = await fresh.transact("issue-1", sending("alpha", "issue-1"));
    assert.ok(again.ok && again.duplicate);
    assert.equal(await streamLast(ncA), lastBefore, "nothing appended");
    assert.equal((await allCommits(ncA)).filter((c) => c.commit.commandId === "issue-1").length, 1);
  });
});

describe("records: the stream keeps every record", () => {
  const { dial } = withServer();

  it("R42: a purge and a message delete on CATALOGUE are refused by the server", async () => {
    const nc = await dial();
    const catalogue = await openCatalogue(nc);
    await catalogue.transact("keep-1", sending("alpha", "keep-1"));
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info(CATALOGUE_STREAM);
    assert.equal(info.config.deny_delete, true);
    assert.equal(info.config.deny_purge, true);
    await assert.rejects(jsm.streams.purge(CATALOGUE_STREAM));
    await assert.rejects(jsm.streams.deleteMessage(CATALOGUE_STREAM, 1));
    await assert.rejects(jsm.streams.deleteMessage(CATALOGUE_STREAM, 1, false));
    assert.equal((await jsm.streams.info(CATALOGUE_STREAM)).state.messages, 1, "the record is still there");
  });
});

describe("records: an invalid event in the stream", () => {
  const { dial } = withServer();

  it("stops the fold with InvalidEvent naming its stream sequence, never skipped", async () => {
    const nc = await dial();
    const catalogue: Catalogue = await openCatalogue(nc);
    await catalogue.transact("ok-1", sending("alpha", "ok-1"));
    const js = jetstream(nc);
    const bad = { commandId: "bad", entity: { kind: "node", id: "alpha" }, events: [{ type: "NodeExploded", actor: "x", commandId: "bad", at: AT, node: "alpha" }] };
    const badAck = await js.publish(catalogueSubject("node", "alpha"), JSON.stringify(bad));
    await js.publish(catalogueSubject("node", "alpha"), "not json");
    const later = await catalogue.transact("ok-2", sending("alpha", "ok-2")).catch((error: unknown) => error);
    assert.ok(later instanceof InvalidEvent, "the writer's catch-up stops at the bad commit");
    assert.equal(later.sequence, badAck.seq);
    assert.equal(catalogue.state.sequence, badAck.seq - 1, "the commits before it are folded");
    await assert.rejects(replay(nc), (error: unknown) => error instanceof InvalidEvent && error.sequence === badAck.seq);
    await assert.rejects(openCatalogue(nc, { useSnapshot: false }), (error: unknown) => error instanceof InvalidEvent && error.sequence === badAck.seq);
    await assert.rejects(readCommits(nc, badAck.seq + 1, () => undefined), (error: unknown) => error instanceof InvalidEvent && error.sequence === badAck.seq + 1);
  });
});
