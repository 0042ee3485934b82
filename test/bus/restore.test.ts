/**
 * Issue 10: records that defend themselves (R43..R47), against a real nats-server and a real
 * controller (test/support/controller.ts). One server per describe: CATALOGUE is a fixed name.
 */
import { enrolRequest } from "../support/enrol.ts";
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { waitFor } from "../support/natsServer.ts";
import { freshControllerSuite } from "../support/controller.ts";
import { ensureCatalogueStream, RecordsUnsafe, replay } from "../../src/records/catalogue.ts";
import { headers as natsHeaders, type NatsConnection } from "@nats-io/transport-node";
import { CATALOGUE_STREAM, catalogueSubject, reportSubject } from "../../src/names.ts";
import { askAs } from "../support/client.ts";
import { meshClient } from "../../src/client/client.ts";
import { runMesh } from "../support/cli.ts";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { canonicalJson } from "../../src/projections/canonical.ts";
import { packState } from "../../src/projections/pack.ts";
import type { Reply } from "../../src/commands/envelope.ts";
import { newUserKey, recordsTag, secretMatches } from "../../src/crypto/secrets.ts";
import type { ControllerFixture } from "../support/controller.ts";
import { everyCredential, nodeOf } from "../../src/projections/index.ts";

const BROKER = JSON.parse(readFileSync(fileURLToPath(new URL("../../examples/broker.json", import.meta.url)), "utf8")) as Record<string, unknown>;

/**
 * Answers as `node`'s host agent would, until `stop()`: reports each declaration it is sent as
 * applied, its digest, records sequence and the controller's tag echoed (R32, R43).
 */
function answerAsHost(fixture: ControllerFixture, node: string): { stop(): Promise<void> } {
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      for (const d of await fixture.drain(node)) {
        fixture.operator.publish(reportSubject(node), JSON.stringify({ node, digest: d.digest, ok: true, recordsSequence: d.recordsSequence, recordsTag: d.recordsTag }));
      }
    }
  })();
  return { stop: async () => { stopped = true; await loop; } };
}

/** A commit of an event type this release does not know (as a newer release, rolled back, wrote it). */
function unknownCommit(): string {
  const at = new Date().toISOString();
  return JSON.stringify({
    commandId: "from-a-newer-release",
    entity: { kind: "node", id: "alpha" },
    events: [{ type: "NodeRenamed", actor: "operator-test", commandId: "from-a-newer-release", at, node: "alpha", to: "alpha2" }],
  });
}

function codeOf(reply: Reply): string {
  return reply.ok ? "ok" : reply.error.code;
}

describe("R47: the controller refuses to serve on records that erase commits", () => {
  const suite = freshControllerSuite();

  it("R47: max_msgs: 5 set by hand on CATALOGUE stops the start, naming max_msgs; nothing is lifted silently", async () => {
    const first = await suite.fixture.start();
    await suite.fixture.enrol("alpha");
    await first.stop();
    const jsm = await jetstreamManager(suite.fixture.operator);
    const config = (await jsm.streams.info(CATALOGUE_STREAM)).config;
    await jsm.streams.update(CATALOGUE_STREAM, { ...config, max_msgs: 5 });
    await assert.rejects(suite.fixture.start(), (error: unknown) => error instanceof RecordsUnsafe && error.setting === "max_msgs");
    assert.equal((await jsm.streams.info(CATALOGUE_STREAM)).config.max_msgs, 5, "the controller did not change the setting behind the operator's back");
  });
});

describe("R47: records changed to erase commits under a running controller", () => {
  const suite = freshControllerSuite();

  it("R47: max_msgs: 3 set on CATALOGUE while the controller serves (erasing the oldest commits at once): every command, query and push answers records-unsafe naming the setting and nothing is appended; mesh replay reports it; with the limit lifted the erased first sequence is still named", async () => {
    const send = (verb: string, body: Record<string, unknown>) => askAs(suite.fixture.operator, "operator-test", verb, body);
    const controller = await suite.fixture.start();
    for (const node of ["alpha", "beta", "gamma"]) await suite.fixture.enrol(node);
    const jsm = await jetstreamManager(suite.fixture.operator);
    const config = (await jsm.streams.info(CATALOGUE_STREAM)).config;
    await jsm.streams.update(CATALOGUE_STREAM, { ...config, max_msgs: 3 });
    const last = await lastSequence(suite.fixture.operator);
    // The controller hears of the change from the bus (the stream's update advisory), not at its next start.
    await waitFor(() => controller.lines.some((l) => l.includes("R47") && l.includes("max_msgs")), { name: "the controller says the records erase commits" });

    for (const [verb, body] of [["node.enrol", enrolRequest("delta")], ["push", {}], ["nodes", {}]] as const) {
      const reply = await send(verb, body);
      assert.equal(codeOf(reply), "records-unsafe", verb);
      if (!reply.ok) assert.match(reply.error.message, /max_msgs/, `${verb} names the setting`);
    }
    assert.equal(await lastSequence(suite.fixture.operator), last, "nothing appended: no append may erase another commit");

    const report = await send("replay", {}) as Record<string, unknown>;
    assert.equal(codeOf(report as Reply), "ok", "mesh replay is served");
    assert.equal(report.valid, false, "a fold from sequence 1 of records that lost their first commits is not valid");
    assert.equal((report.unsafe as { setting: string } | undefined)?.setting, "max_msgs");

    await jsm.streams.update(CATALOGUE_STREAM, { ...config, max_msgs: -1 });
    await waitFor(() => controller.lines.some((l) => l.includes("R47") && l.includes("first_seq")), { name: "the controller names the erased first sequence" });
    const after = await send("node.enrol", enrolRequest("delta"));
    assert.equal(codeOf(after), "records-unsafe");
    if (!after.ok) assert.match(after.error.message, /first_seq/);
    assert.equal(((await send("replay", {}) as Record<string, unknown>).unsafe as { setting: string } | undefined)?.setting, "first_seq");
    assert.equal(await lastSequence(suite.fixture.operator), last);
    await controller.stop();
  });
});

describe("R45: a commit no fold can read has a way out", () => {
  const suite = freshControllerSuite();

  it("R45: an unknown event type stops every verb naming its sequence and type; mesh replay --void appends a voiding commit; the mesh serves; replay and snapshot + tail agree", async () => {
    const send = (verb: string, body: Record<string, unknown>) => askAs(suite.fixture.operator, "operator-test", verb, body);
    const first = await suite.fixture.start();
    await suite.fixture.enrol("alpha");
    const ack = await jetstream(suite.fixture.operator).publish(catalogueSubject("node", "alpha"), unknownCommit());
    const bad = ack.seq;

    for (const [verb, body] of [["nodes", {}], ["node.enrol", enrolRequest("beta")], ["push", {}]] as const) {
      const reply = await send(verb, body);
      assert.equal(codeOf(reply), "invalid-records", verb);
      if (!reply.ok) {
        assert.ok(reply.error.message.includes(String(bad)) && reply.error.message.includes("NodeRenamed"), `${verb} names sequence and type`);
      }
    }
    await first.stop();

    // A restart does not die on it: it serves replay only, and its log line names both, whole.
    const second = await suite.fixture.start();
    const line = second.lines.find((l) => l.includes(`sequence ${bad}`));
    assert.ok(line && line.includes("NodeRenamed") && line.includes("mesh replay --void"), `one whole log line: ${line}`);
    assert.equal(codeOf(await send("nodes", {})), "invalid-records");
    const report = await send("replay", {});
    assert.equal(codeOf(report), "ok");
    const stoppedAt = (report as Record<string, unknown>).stoppedAt as { sequence: number; types: string[] };
    assert.deepEqual([stoppedAt.sequence, stoppedAt.types], [bad, ["NodeRenamed"]]);

    assert.equal(codeOf(await send("replay", { void: bad - 1, reason: "wrong one" })), "not-voidable");
    assert.equal(codeOf(await send("replay", { void: bad })), "invalid-request");
    const voided = await send("replay", { void: bad, reason: "written by 0.2, rolled back to 0.1" });
    assert.equal(codeOf(voided), "ok");
    assert.equal(codeOf(voided), "ok");
    assert.equal((voided as Record<string, unknown>).stoppedAt, null);

    assert.equal(codeOf(await send("nodes", {})), "ok");
    assert.equal(codeOf(await send("node.enrol", enrolRequest("beta"))), "ok");
    const healthy = await send("replay", {}) as Record<string, unknown>;
    assert.equal(healthy.valid, true);
    assert.equal(healthy.matchesServing, true);
    await second.stop(); // saves a snapshot past the voided commit

    const third = await suite.fixture.start();
    assert.ok(third.catalogue.startedFrom > bad, "the third start folds from a snapshot past the voided commit");
    assert.equal(canonicalJson(packState(third.catalogue.state)), canonicalJson(packState(await replay(suite.fixture.operator))), "snapshot + tail = replay (R41)");
    assert.equal(third.catalogue.held, null);
  });
});

describe("issue 12: mesh replay --void --dry-run", () => {
  const suite = freshControllerSuite();

  it("issue 12: replay --void --dry-run answers the voiding commit it would append and appends nothing; a bare report takes no dry run", async () => {
    const client = meshClient(suite.fixture.operator, "operator-test", { timeoutMs: 20_000 });
    const controller = await suite.fixture.start();
    await suite.fixture.enrol("gamma");
    const bad = (await jetstream(suite.fixture.operator).publish(catalogueSubject("node", "gamma"), unknownCommit())).seq;
    const before = await lastSequence(suite.fixture.operator);
    const dry = await client.dryRun("replay", { void: bad, reason: "rolled back" });
    assert.ok(dry.ok && dry.dryRun, JSON.stringify(dry));
    assert.equal(dry.wouldAppendAfter, bad);
    assert.deepEqual(dry.events.map((e) => [e.type, e.sequence]), [["CommitVoided", bad]], JSON.stringify(dry.events));
    assert.equal(await lastSequence(suite.fixture.operator), before, "a dry run appends nothing");
    assert.equal(controller.catalogue.held?.sequence, bad, "the commit is still held");
    const refused = await client.dryRun("replay", { void: bad - 1, reason: "wrong one" });
    assert.equal(refused.ok ? "ok" : refused.error.code, "not-voidable", "the refusal the real void would get");
    const report = await client.dryRun("replay", {});
    assert.deepEqual(report.ok ? ["ok"] : [report.error.code, report.error.field], ["invalid-request", "dryRun"]);
    const credential = join(suite.fixture.dir, "operator.json");
    writeFileSync(credential, JSON.stringify({ address: suite.server.url, user: "operator-test", password: "unused" }));
    const cli = await runMesh(["replay", "--void", String(bad), "--reason", "rolled back", "--dry-run"], { MESH_CREDENTIAL: credential });
    assert.equal(cli.code, 0, cli.err);
    assert.match(cli.out, /CommitVoided/);
    assert.equal(await lastSequence(suite.fixture.operator), before, "nor does the CLI's");
    await controller.stop();
  });
});

/**
 * Puts CATALOGUE back as it was at sequence `keep`: the stream deleted and created anew, its first
 * `keep` messages published again as they were (subject, data, headers). What restoring an older
 * backup of the stream (or a tail lost in a crash) leaves behind.
 */
async function rollBackRecords(nc: NatsConnection, keep: number): Promise<void> {
  const jsm = await jetstreamManager(nc);
  const kept = [];
  for (let seq = 1; seq <= keep; seq += 1) kept.push((await jsm.streams.getMessage(CATALOGUE_STREAM, { seq }))!);
  await jsm.streams.delete(CATALOGUE_STREAM);
  await ensureCatalogueStream(jsm);
  const js = jetstream(nc);
  for (const m of kept) {
    const h = natsHeaders();
    for (const [key, values] of m.header ?? []) for (const value of values) h.append(key, value);
    await js.publish(m.subject, m.data, { headers: h });
  }
}

/** The kinds of evidence a catalogue holds that its records are behind (R43), none when it serves. */
function evidenceKinds(catalogue: { readonly behind: ReadonlyArray<{ kind: string }> | null }): string[] {
  return (catalogue.behind ?? []).map((e) => e.kind);
}

async function lastSequence(nc: NatsConnection): Promise<number> {
  return (await (await jetstreamManager(nc)).streams.info(CATALOGUE_STREAM)).state.last_seq;
}

describe("R43: records behind the world are detected, at start and while running", () => {
  const suite = freshControllerSuite();

  it("R43: records that go back under a running controller: every command and push answers records-behind naming the evidence (never busy-retry), nothing is appended; a restart appends nothing over the lost sequences and loads no snapshot from the lost future", async () => {
    const send = (verb: string, body: Record<string, unknown>) => askAs(suite.fixture.operator, "operator-test", verb, body);
    const controller = await suite.fixture.start();
    await suite.fixture.enrol("alpha");
    const backup = await lastSequence(suite.fixture.operator);
    await suite.fixture.enrol("beta");
    await suite.fixture.enrol("gamma");
    await controller.catalogue.snapshot(); // a snapshot in what will be the lost future
    await rollBackRecords(suite.fixture.operator, backup);

    for (const [verb, body] of [["node.enrol", enrolRequest("delta")], ["nodes", {}], ["push", {}]] as const) {
      const reply = await send(verb, body);
      assert.equal(codeOf(reply), "records-behind", verb);
    }
    assert.equal(await lastSequence(suite.fixture.operator), backup, "nothing appended over the lost sequences");
    const report = await send("replay", {});
    assert.equal(codeOf(report), "ok", "mesh replay is served");
    await controller.stop();

    const restarted = await suite.fixture.start();
    assert.ok(restarted.catalogue.behind && restarted.catalogue.behind.length > 0, "behind at start, from the mark kept outside the records");
    assert.equal(restarted.catalogue.startedFrom, 0, "the snapshot from the lost future is not loaded");
    assert.ok(restarted.lines.some((l) => l.includes("mesh replay")), "the start says what to run");
    assert.equal(codeOf(await send("node.enrol", enrolRequest("delta"))), "records-behind");
    assert.equal(await lastSequence(suite.fixture.operator), backup, "a restart appends nothing (not even the controller's own credential)");
    await restarted.stop();
  });
});

describe("R44: mesh replay, and accepting a restore", () => {
  const suite = freshControllerSuite();

  it("R44: replay on a healthy mesh changes nothing and says so; after a restore, --accept-restore appends RecordsRestored with the lost range, rotates every credential (the controller's and the asker's too, R50; the asker gets its seed; a node onto the key the bus ran, R64), unlatches, and the next push works", async () => {
    const send = (verb: string, body: Record<string, unknown>) => askAs(suite.fixture.operator, "operator-test", verb, body);
    const controller = await suite.fixture.start();
    await suite.fixture.enrol("alpha");
    // alpha holds mesh-broker: its report of the list its bus runs is the one that counts (R44).
    await suite.fixture.send("module.register", { manifest: BROKER });
    await suite.fixture.send("assign", { module: "broker", node: "alpha" });
    const before = await lastSequence(suite.fixture.operator);
    const healthy = await send("replay", {}) as Record<string, unknown>;
    assert.deepEqual([healthy.ok, healthy.valid, healthy.matchesServing, healthy.changed, healthy.behind], [true, true, true, false, undefined]);
    assert.equal(await lastSequence(suite.fixture.operator), before, "a healthy replay appends nothing");

    const hashAt = (name: string) => everyCredential(controller.catalogue.state.credentials).find((c) => c.principal.kind === "node" && c.principal.name === name)?.nkey;
    const backup = await lastSequence(suite.fixture.operator);
    const backupHash = hashAt("alpha");
    await send("credential.rotate", { kind: "node", name: "alpha", nkey: newUserKey().publicKey });
    const rotatedAway = hashAt("alpha");
    await suite.fixture.enrol("late");
    const seen = await lastSequence(suite.fixture.operator);
    // An offline node's last report, from the future the restore loses: evidence now, not after
    // acceptance. Its declaration was composed from records sequence seen + 5 by the controller of
    // that future, which tagged it (the test holds the mesh key, and stands in for it).
    const tag = recordsTag(suite.fixture.meshKey, { node: "alpha", digest: "d", recordsSequence: seen + 5 });
    suite.fixture.operator.publish(reportSubject("alpha"), JSON.stringify({ node: "alpha", digest: "d", ok: true, recordsSequence: seen + 5, recordsTag: tag, users: ["node-alpha", "node-late"], keys: { "node-alpha": rotatedAway, "node-late": hashAt("late") } }));
    await suite.fixture.operator.flush();
    await controller.stop();
    await rollBackRecords(suite.fixture.operator, backup);

    const restarted = await suite.fixture.start();
    assert.ok(restarted.catalogue.behind);
    // issue 12: the dry run answers the commit it would append, appends nothing and stays latched.
    const dry = await meshClient(suite.fixture.operator, "operator-test", { timeoutMs: 20_000 }).dryRun("replay", { acceptRestore: true });
    assert.ok(dry.ok && dry.dryRun, JSON.stringify(dry));
    assert.deepEqual([...new Set(dry.events.map((e) => e.type))], ["RecordsRestored", "CredentialRotated"]);
    assert.deepEqual(dry.events[0]?.lost, { from: backup + 1, to: seen + 5 });
    assert.ok(dry.events.every((e) => !("hash" in e) && !("sealed" in e)), "no secret in a dry run's events (R3)");
    assert.equal(await lastSequence(suite.fixture.operator), backup, "a dry run appends nothing");
    assert.ok(restarted.catalogue.behind, "and unlatches nothing");
    const accepted = await send("replay", { acceptRestore: true }) as Record<string, unknown>;
    assert.equal(accepted.ok, true, JSON.stringify(accepted));
    assert.deepEqual(accepted.lost, { from: backup + 1, to: seen + 5 }, "up to the furthest sequence the world saw (the offline node's report)");
    assert.deepEqual(accepted.rotated, [{ kind: "controller", name: "mesh-controller" }, { kind: "node", name: "alpha" }, { kind: "operator", name: "test" }]);
    const own = accepted.credential as { user: string; seed: string };
    assert.equal(own.user, "operator-test", "the asker's own fresh credential comes back to it");
    const asker = everyCredential(restarted.catalogue.state.credentials).find((c) => c.user === "operator-test")!;
    assert.ok(secretMatches(own.seed, asker), "with the seed whose public key the records now hold");
    assert.equal(restarted.catalogue.behind, null, "unlatched");
    assert.deepEqual(accepted.unknownToRecords, ["node-late"], "the node enrolled after the backup, on the installed list, is named");
    const alpha = everyCredential(restarted.catalogue.state.credentials).find((c) => c.principal.kind === "node" && c.principal.name === "alpha")!;
    assert.ok(alpha.nkey !== undefined && backupHash !== undefined && rotatedAway !== undefined, "nkey credentials (R63)");
    assert.notEqual(alpha.nkey, backupHash, "the backup's key (rotated away after the backup) is not the one installed next");
    assert.equal(alpha.nkey, rotatedAway, "R64: the node's key is the one the bus ran (generated on the node, no one else can mint it)");
    assert.equal(alpha.sealed, undefined, "still no node secret in the records");
    assert.equal(nodeOf(restarted.catalogue.state.nodes, "late"), undefined, "the node enrolled after the backup is not in the records");
    assert.equal(codeOf(await send("nodes", {})), "ok");
    // alpha's host answers: the push waits for the broker's report of the controller's fresh key (R50).
    const alphaHost = answerAsHost(suite.fixture, "alpha");
    try {
      assert.equal(codeOf(await send("push", {})), "ok");
    } finally {
      await alphaHost.stop();
    }
    await restarted.stop();

    const again = await suite.fixture.start();
    assert.equal(again.catalogue.behind, null, "the mark moved to the accepted records, and a report from before the restore is no evidence: a restart serves");
    await again.stop();
  });
});

describe("R43: a host reporting a declaration the records never sent", () => {
  const suite = freshControllerSuite();

  it("R43: pushed declarations carry their records sequence and the controller's tag, and hosts report both; after the records lose their tail under a controller that kept no mark, the host's report of that declaration refuses every command records-behind, live and at the next start; the same claim with no tag, or the tag moved to another sequence, is no evidence", async () => {
    const send = (verb: string, body: Record<string, unknown>) => askAs(suite.fixture.operator, "operator-test", verb, body);
    const first = await suite.fixture.start();
    await suite.fixture.enrol("alpha");
    await suite.fixture.enrol("beta");
    await first.push();
    const [declaration] = (await suite.fixture.drain("alpha")).slice(-1);
    const sequence = Number(declaration!.recordsSequence);
    assert.equal(typeof declaration!.recordsSequence, "number", "the declaration names the records' sequence it was composed from");
    assert.equal(typeof declaration!.recordsTag, "string", "and carries the controller's tag on it");
    const digest = String(declaration!.digest);

    // What alpha's host would report; and two claims it could make up, neither of them evidence.
    const genuine = { node: "alpha", digest, ok: true, recordsSequence: sequence, recordsTag: declaration!.recordsTag };
    const moved = { ...genuine, recordsSequence: sequence + 40 };
    const untagged = { node: "alpha", digest, ok: true, recordsSequence: sequence + 41 };
    for (const report of [moved, untagged]) suite.fixture.operator.publish(reportSubject("alpha"), JSON.stringify(report));
    await suite.fixture.operator.flush();
    await waitFor(() => first.lines.some((l) => l.includes(String(sequence + 41))), { name: "the untagged claim is heard and logged" });
    assert.equal(first.catalogue.behind, null, "no evidence from either");
    assert.equal(codeOf(await send("nodes", {})), "ok");

    // The controller's machine dies (no snapshot, no goodbye) and the bus's records lose their tail:
    // beta's enrolment and what followed. A new controller, with a state folder of its own (no mark).
    await first.nc.close();
    await rollBackRecords(suite.fixture.operator, sequence - 1);
    const fresh = { ...suite.fixture.env, MESH_CONTROLLER_STATE_DIR: mkdtempSync(join(tmpdir(), "mesh-state-")) };
    const second = await suite.fixture.start(fresh);
    assert.deepEqual(evidenceKinds(second.catalogue), [], "nothing the controller holds says so, and the stored report is the untagged one");
    assert.equal(codeOf(await send("nodes", {})), "ok");

    // alpha's host restates what it applied: the controller sent it from records the stream no longer has.
    suite.fixture.operator.publish(reportSubject("alpha"), JSON.stringify(genuine));
    await suite.fixture.operator.flush();
    await waitFor(async () => codeOf(await send("nodes", {})) === "records-behind", { name: "nodes answers records-behind" });
    assert.deepEqual(evidenceKinds(second.catalogue), ["host-report-ahead"], "the host's report is the evidence");
    assert.equal(codeOf(await send("node.enrol", enrolRequest("gamma"))), "records-behind");
    assert.equal(await lastSequence(suite.fixture.operator), sequence - 1, "nothing appended");
    await second.stop();

    const again = await suite.fixture.start(fresh);
    assert.deepEqual(evidenceKinds(again.catalogue), ["host-report-ahead"], "the stored report is evidence at the next start");
    assert.equal(codeOf(await send("nodes", {})), "records-behind");
    await again.stop();
  });
});
