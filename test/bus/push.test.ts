import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { startNatsServer, waitFor, type NatsServer } from "../support/natsServer.ts";
import { controllerFixture, openAsNode, type ControllerFixture } from "../support/controller.ts";
import type { Controller } from "../../src/bootstrap/main.ts";
import type { NodeReport, PushReport } from "../../src/push/push.ts";
import { askAs } from "../support/client.ts";
import { openWithMeshKey } from "../../src/crypto/secrets.ts";
import {
  CONTROL_STREAM, REPORTS_STREAM, declarationSubject, reportSubject, userListPartSubject, workConsumer, workStream, workSubject,
} from "../../src/names.ts";
import { userListPartHeaders } from "../../src/push/publish.ts";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { runCli } from "../../src/cli/run.ts";
import { EXIT_OK, EXIT_REFUSED, type CliIo } from "../../src/cli/context.ts";
import { lastSent, nodeNames } from "../../src/projections/index.ts";
import { push, type WaitClock } from "../../src/push/push.ts";
import { parseControllerConfig } from "../../src/config.ts";

const builder = {
  name: "builder", version: "1.0.0",
  seats: { "mesh-build": { protocol: "mesh-work", accepts: ["build"], emits: ["built"] } },
  claims: ["mesh-build"],
};
const web = { name: "web", version: "1.0.0" };
const sealer = { name: "sealer", version: "1.0.0" };
const lonely = { name: "lonely", version: "1.0.0" };
const broker = { name: "broker", version: "2.9.10", seats: { "mesh-broker": { protocol: "nats" } }, claims: ["mesh-broker"] };

const sha256Hex = (text: string) => createHash("sha256").update(text).digest("hex");

function outcome(report: PushReport, node: string): NodeReport {
  const line = report.nodes.find((n) => n.node === node);
  assert.ok(line, `the report names ${node}`);
  return line;
}

describe("push", () => {
  let server: NatsServer;
  let fixture: ControllerFixture;
  let controller: Controller & { lines: string[] };
  const keys: Record<string, string> = {};

  before(async () => {
    server = await startNatsServer();
    fixture = await controllerFixture(server);
    controller = await fixture.start();
  });
  after(async () => {
    await fixture?.close();
    await server?.stop();
  });

  it("R16: a seat's work published before any holder exists is delivered once a holder is assigned and pushed", async () => {
    await fixture.send("module.register", { manifest: builder });
    const first = await controller.push();
    assert.deepEqual(first.raised.refused, []);
    const js = jetstream(fixture.operator);
    await js.publish(workSubject("mesh-build", "build"), JSON.stringify({ job: "early" }));

    keys["build-1"] = await fixture.enrol("build-1");
    await fixture.send("module.issue", { module: "builder" });
    await fixture.send("assign", { module: "builder", node: "build-1" });
    const second = await controller.push();
    assert.equal(outcome(second, "build-1").outcome, "sent");

    const consumer = await js.consumers.get(workStream("mesh-build"), workConsumer("mesh-build"));
    const m = await consumer.next({ expires: 2_000 });
    assert.ok(m, "the early work is delivered to the seat's consumer");
    assert.deepEqual(m.json(), { job: "early" });
    m.ack();
  });

  it("R5: a module's consumers are raised at every push, not only when it was registered or issued: deleted by hand, the next push raises it again", async () => {
    await fixture.send("module.register", { manifest: builder });
    await controller.push();
    const jsm = await jetstreamManager(fixture.operator);
    await jsm.consumers.delete(workStream("mesh-build"), workConsumer("mesh-build"));
    const again = await controller.push();
    assert.equal(again.raised.created, 1, JSON.stringify(again.raised));
    assert.equal((await jsm.consumers.info(workStream("mesh-build"), workConsumer("mesh-build"))).name, workConsumer("mesh-build"));
  });

  it("R29: an empty declaration is sent, and secrets travel sealed to the node's key only", async () => {
    keys["idle-1"] = await fixture.enrol("idle-1");
    keys["seal-1"] = await fixture.enrol("seal-1");
    await fixture.send("module.register", { manifest: sealer });
    await fixture.send("module.issue", { module: "sealer" });
    await fixture.send("assign", { module: "sealer", node: "seal-1" });
    const report = await controller.push();
    assert.equal(outcome(report, "idle-1").outcome, "sent");
    const [declaration] = (await fixture.drain("idle-1")).slice(-1);
    assert.ok(declaration);
    assert.deepEqual(declaration.modules, []);
    assert.equal(declaration.digest, outcome(report, "idle-1").digest);

    const built = (await fixture.drain("seal-1")).at(-1) as { modules: Array<{ credential: { sealed: string } }> };
    const sealed = built.modules[0]!.credential.sealed;
    const password = openAsNode(keys["seal-1"]!, sealed);
    assert.ok(password.length > 20);
    assert.throws(() => openWithMeshKey(fixture.meshKey, sealed), "the wire form is not the records' mesh-key form");
    assert.throws(() => openAsNode(keys["idle-1"]!, sealed), "another node cannot open it");
  });

  it("R31: pushing node A after a record that changes node B's declaration also sends B", async () => {
    keys["a"] = await fixture.enrol("a");
    keys["b"] = await fixture.enrol("b");
    keys["c"] = await fixture.enrol("c");
    await fixture.send("module.register", { manifest: web });
    await fixture.send("module.issue", { module: "web" });
    await controller.push();
    await everyNodeApplied(fixture, controller); // else each is behind by its report (R78)
    const before = lastSent(controller.catalogue.state.sent, "b")?.digest;

    await fixture.send("assign", { module: "web", node: "b" });
    const report = await controller.push({ nodes: ["a"] });
    assert.equal(outcome(report, "a").outcome, "sent", "the named node is sent though not behind");
    assert.equal(outcome(report, "b").outcome, "sent", "the node behind is sent too");
    assert.equal(outcome(report, "c").outcome, "unchanged");
    assert.notEqual(lastSent(controller.catalogue.state.sent, "b")?.digest, before);
    assert.equal(lastSent(controller.catalogue.state.sent, "b")?.digest, outcome(report, "b").digest);
    assert.equal(report.boundHit, false);

    await everyNodeApplied(fixture, controller);
    const again = await controller.push();
    assert.ok(again.nodes.every((n) => n.outcome === "unchanged" || n.outcome === "refused"), `nothing is behind after a push its nodes applied: ${JSON.stringify(again.nodes)}`);
  });

  it("R30: a node whose composition fails is refused in the report while the others are sent", async () => {
    keys["broken"] = await fixture.enrol("broken");
    keys["fine"] = await fixture.enrol("fine");
    await fixture.send("module.register", { manifest: lonely });
    await fixture.send("assign", { module: "lonely", node: "broken" }); // never issued: left out of broken's declaration
    // A module the catalogue lacks (records an older release left): broken cannot be composed.
    const assigned = await controller.catalogue.transact("r30-ghost", () => ({
      ok: true, entity: { kind: "module", id: "ghost" },
      events: [{ actor: "operator-test", commandId: "r30-ghost", at: new Date().toISOString(), type: "ModuleAssigned", module: "ghost", node: "broken" }],
    }));
    assert.ok(assigned.ok);
    const report = await controller.push();
    const broken = outcome(report, "broken");
    assert.equal(broken.outcome, "refused");
    assert.equal(broken.refusal?.code, "module-unregistered");
    assert.equal(outcome(report, "fine").outcome, "sent");
    assert.equal(lastSent(controller.catalogue.state.sent, "broken"), undefined);
  });

  it("R32: push --wait waits for each sent node's report and names the nodes that did not answer", async () => {
    await fixture.enrol("quiet");
    await fixture.enrol("talker");
    await fixture.send("module.register", { manifest: { ...web, name: "web2" } });
    await fixture.send("module.issue", { module: "web2" });
    await fixture.send("assign", { module: "web2", node: "talker" });
    // Both nodes are behind (never sent); only "talker" answers.
    await fixture.drain("talker");
    const answering = (async () => {
      const declarations = await waitForDeclaration(fixture, "talker");
      fixture.report("talker", String(declarations.digest));
    })();
    const report = await controller.push({ wait: true, timeoutMs: 1_500 });
    await answering;
    assert.equal(outcome(report, "talker").outcome, "applied");
    assert.equal(outcome(report, "quiet").outcome, "timed-out");
    // besides quiet, the report names any other node of the fixture an earlier test sent: none ever
    // reported applying (simulated nodes), so none is "unchanged" (R55)
    assert.ok(report.timedOut.includes("quiet") && !report.timedOut.includes("talker"), JSON.stringify(report.timedOut));
    for (const node of report.timedOut) assert.equal(outcome(report, node).outcome, "timed-out");
  });

  it("R32 R55: push --wait waits again for a node whose last declaration was never reported applied, names it, and says unchanged once it was", async () => {
    await fixture.enrol("sleepy");
    // its agent is down: the first wait times out
    const first = await controller.push({ nodes: ["sleepy"], wait: true, timeoutMs: 500 });
    assert.equal(outcome(first, "sleepy").outcome, "timed-out");
    const digest = outcome(first, "sleepy").digest!;
    // nothing changed since, but nothing says it was applied: not "unchanged", and named
    const second = await controller.push({ wait: true, timeoutMs: 500 });
    assert.equal(outcome(second, "sleepy").outcome, "timed-out");
    assert.equal(outcome(second, "sleepy").digest, digest, "the same declaration (sent again: no report says it was applied, R78)");
    assert.ok(second.timedOut.includes("sleepy"), "the report names it");
    // the agent comes back and reports it (the REPORTS stream keeps that report)
    fixture.report("sleepy", digest);
    await waitFor(async () => (await jetstreamManager(fixture.operator)).streams.getMessage(REPORTS_STREAM, { last_by_subj: reportSubject("sleepy") }).then(() => true, () => false), { timeoutMs: 5_000, name: "the stored report" });
    const third = await controller.push({ wait: true, timeoutMs: 500 });
    assert.equal(outcome(third, "sleepy").outcome, "unchanged");
    assert.ok(!third.timedOut.includes("sleepy"));
  });

  it("R78: a node whose last report is a failed apply is sent again by a push without names, and push --wait then reports it applied", async () => {
    await fixture.enrol("mend-1");
    const digest = outcome(await controller.push({ nodes: ["mend-1"] }), "mend-1").digest!;
    await fixture.drain("mend-1");
    fixture.report("mend-1", digest, false); // its disk was full: not applied
    const jsm = await jetstreamManager(fixture.operator);
    await waitFor(async () => (await jsm.streams.getMessage(REPORTS_STREAM, { last_by_subj: reportSubject("mend-1") }).catch(() => null))?.json<{ ok: boolean }>().ok === false,
      { timeoutMs: 5_000, name: "the failed report stored" });
    // Its disk was freed: its agent applies what it is sent next.
    let received: Record<string, unknown> | undefined;
    const answering = (async () => {
      received = await waitForDeclaration(fixture, "mend-1");
      fixture.report("mend-1", String(received.digest));
    })().catch(() => undefined);
    const mended = await controller.push({ wait: true, timeoutMs: 3_000 });
    await answering;
    assert.equal(received?.digest, digest, "the plain push sent it again, the same declaration");
    const line = outcome(mended, "mend-1");
    assert.equal(line.outcome, "applied", JSON.stringify(line));
    assert.ok(!mended.timedOut.includes("mend-1"));
  });

  it("R32 R55: push <node> --wait of an unchanged declaration whose agent is not running is not presented as freshly applied: it says unchanged and when the node last reported applying it, and waits for nothing", async () => {
    await fixture.enrol("stopped-1");
    const first = await controller.push({ nodes: ["stopped-1"] });
    const digest = outcome(first, "stopped-1").digest!;
    fixture.report("stopped-1", digest); // applied, then its agent stopped
    const stored = await waitFor(async () => (await jetstreamManager(fixture.operator)).streams.getMessage(REPORTS_STREAM, { last_by_subj: reportSubject("stopped-1") }).then((m) => m ?? undefined, () => undefined), { timeoutMs: 5_000, name: "the stored report" });
    // (other nodes of this fixture never report: the wait for them is kept short)
    const again = await controller.push({ nodes: ["stopped-1"], wait: true, timeoutMs: 1_500 });
    const line = outcome(again, "stopped-1");
    assert.equal(line.outcome, "unchanged", "not `applied`: nothing was applied by this push");
    assert.equal(line.digest, digest);
    assert.equal(line.reportedAt, stored.time.toISOString(), "when it last reported applying it");
    assert.ok(!again.timedOut.includes("stopped-1"));
  });

  it("R32: push --wait of a changed declaration does not count a report stored before the send, even of the same digest", async () => {
    await fixture.enrol("flip-1");
    await fixture.send("module.register", { manifest: { ...web, name: "web-flip" } });
    await fixture.send("module.issue", { module: "web-flip" });
    const a = outcome(await controller.push({ nodes: ["flip-1"] }), "flip-1").digest!;
    fixture.report("flip-1", a); // applied A, then its agent stopped
    await waitFor(async () => (await jetstreamManager(fixture.operator)).streams.getMessage(REPORTS_STREAM, { last_by_subj: reportSubject("flip-1") }).catch(() => undefined), { timeoutMs: 5_000, name: "the stored report" });
    await fixture.send("assign", { module: "web-flip", node: "flip-1" });
    await controller.push(); // B sent, never applied
    await fixture.send("unassign", { module: "web-flip", node: "flip-1" });
    const back = await controller.push({ wait: true, timeoutMs: 1_500 }); // A again: the stored report of A is older than this send
    assert.equal(outcome(back, "flip-1").digest, a);
    assert.equal(outcome(back, "flip-1").outcome, "timed-out");
  });

  it("R55: every node's last report is readable from the bus (the reports verb, mesh nodes): what it applied, when, drift", async () => {
    await fixture.enrol("remote-1");
    const pushed = await controller.push({ nodes: ["remote-1"] });
    const digest = outcome(pushed, "remote-1").digest!;
    // the node's agent applied it, then a re-check wrote two files back (the last report per node is kept)
    fixture.report("remote-1", digest);
    fixture.operator.publish(reportSubject("remote-1"), JSON.stringify({ node: "remote-1", digest, ok: true, drift: ["modules/a/env", "modules/a/module.json"] }));
    await fixture.operator.flush();
    const ask = async (body: Record<string, unknown>) => {
      const reply = await askAs(fixture.operator, "operator-test", "reports", body, 20_000);
      assert.ok(reply.ok, JSON.stringify(reply));
      return reply as unknown as { reports: Array<{ node: string; digest: string; ok: boolean; at: string; drift?: string[] }>; next?: string };
    };
    const named = await waitFor(async () => {
      const reply = await ask({ nodes: ["remote-1", "never-reported"] });
      return reply.reports.length === 1 && reply.reports[0]!.drift ? reply : undefined;
    }, { timeoutMs: 5_000, name: "the drift report stored" });
    const [last] = named.reports;
    assert.equal(last!.node, "remote-1");
    assert.equal(last!.digest, digest);
    assert.equal(last!.ok, true);
    assert.deepEqual(last!.drift, ["modules/a/env", "modules/a/module.json"]);
    assert.ok(!Number.isNaN(Date.parse(last!.at)), "when: the time the bus stored it");
    // every reporting node, a page at a time (R59)
    const firstPage = await ask({ limit: 1 });
    assert.equal(firstPage.reports.length, 1);
    if (firstPage.next !== undefined) {
      const rest = await ask({ after: firstPage.next });
      assert.ok(![...rest.reports].some((r) => r.node === firstPage.reports[0]!.node));
    }
    const refused = await askAs(fixture.operator, "operator-test", "reports", { nodes: ["Not A Node"] }, 20_000);
    assert.ok(!refused.ok && refused.error.code === "invalid-request");

    // `mesh nodes` shows it
    const operatorFile = join(fixture.dir, "operator-nodes.json");
    writeFileSync(operatorFile, JSON.stringify({ address: server.url, user: "operator-test", password: "unused" }), { mode: 0o600 });
    let out = "";
    const io: CliIo = { stdout: { write: (text: string) => { out += text; } }, stderr: { write: () => undefined }, env: { MESH_CREDENTIAL: operatorFile } };
    assert.equal(await runCli(["nodes", "--json"], io), EXIT_OK);
    const row = (JSON.parse(out) as { nodes: Array<{ name: string; lastReport: { digest: string; outcome: string; at: string; drift: string[] } | null }> }).nodes.find((n) => n.name === "remote-1");
    assert.equal(row!.lastReport?.digest, digest, "--json: the last report is data, not a formatted line");
    assert.equal(row!.lastReport?.outcome, "applied");
    assert.deepEqual(row!.lastReport?.drift, ["modules/a/env", "modules/a/module.json"]);
    assert.ok(!Number.isNaN(Date.parse(row!.lastReport!.at)));
    out = "";
    assert.equal(await runCli(["nodes"], io), EXIT_OK);
    assert.match(out, new RegExp(`remote-1 .*${digest.slice(0, 12)} applied at .*2 drifted file`), "the table says it in one line");
  });

  it("R12 R32: the push verb answers over the bus; a dry run redacts secrets and sends nothing", async () => {
    await fixture.enrol("dry-1");
    await fixture.send("module.register", { manifest: { ...web, name: "web3" } });
    await fixture.send("module.issue", { module: "web3" });
    await fixture.send("assign", { module: "web3", node: "dry-1" });
    const sequence = controller.catalogue.state.sequence;
    const reply = await askAs(fixture.operator, "operator-test", "push", { dryRun: true }, 20_000);
    assert.equal(reply.ok, true);
    const report = reply as unknown as PushReport;
    assert.equal(report.dryRun, true);
    assert.equal(outcome(report, "dry-1").outcome, "sent");
    assert.ok(Array.isArray(report.leftOut));
    const text = JSON.stringify(report.declarations);
    assert.match(text, /\[redacted\]/);
    assert.doesNotMatch(text, /"sealed":"(?!\[redacted\])/);
    await controller.catalogue.catchUp();
    assert.equal(controller.catalogue.state.sequence, sequence, "a dry run records nothing");

    const refused = await askAs(fixture.operator, "operator-test", "push", { nodes: ["Not A Node"] }, 20_000);
    assert.equal(refused.ok, false);
    if (!refused.ok) assert.equal(refused.error.code, "invalid-request");
  });

  it("R31: a dry run (mesh compose) shows the provisions the push would mint first and the node it would send, not a refusal the push would not have; it mints nothing", async () => {
    await fixture.enrol("dry-mint-1");
    await fixture.send("module.register", { manifest: { name: "dry-provider", version: "1.0.0", seats: { "dry-git": { protocol: "git", provides: "git" } }, claims: ["dry-git"] } });
    await fixture.send("module.register", { manifest: { name: "dry-consumer", version: "1.0.0", uses: ["dry-git"] } });
    await fixture.send("module.issue", { module: "dry-consumer" });
    await fixture.send("assign", { module: "dry-consumer", node: "dry-mint-1" });
    await controller.catalogue.catchUp();
    const sequence = controller.catalogue.state.sequence;
    const reply = await askAs(fixture.operator, "operator-test", "push", { dryRun: true, nodes: ["dry-mint-1"] }, 20_000);
    assert.equal(reply.ok, true);
    const report = reply as unknown as PushReport;
    assert.equal(outcome(report, "dry-mint-1").outcome, "sent", JSON.stringify(outcome(report, "dry-mint-1")));
    assert.equal(report.provisionsMinted, 1, "the dry run counts the provision the push would mint");
    const declaration = report.declarations!.find((d) => d.node === "dry-mint-1")!;
    assert.deepEqual(declaration.modules.find((m) => m.module === "dry-consumer")!.provisions.map((p) => [p.seat, p.provision, p.sealed]), [["dry-git", "git", "[redacted]"]]);
    await controller.catalogue.catchUp();
    assert.equal(controller.catalogue.state.sequence, sequence, "a dry run mints nothing");
  });

  it("R31: a push naming a node that is not enrolled is refused before anything is composed or sent: unknown-node, field nodes, no event appended, no declaration sent to the others", async () => {
    await fixture.enrol("known-1");
    await controller.push();
    await fixture.drain("known-1");
    await fixture.send("module.register", { manifest: { ...web, name: "web9" } });
    await fixture.send("module.issue", { module: "web9" });
    await fixture.send("assign", { module: "web9", node: "known-1" }); // known-1 is behind: a push would send it
    await controller.catalogue.catchUp();
    const sequence = controller.catalogue.state.sequence;
    const refused = await askAs(fixture.operator, "operator-test", "push", { nodes: ["wbe1"] }, 20_000);
    assert.equal(refused.ok, false, JSON.stringify(refused));
    if (!refused.ok) assert.deepEqual([refused.error.code, refused.error.field], ["unknown-node", "nodes"]);
    await controller.catalogue.catchUp();
    assert.equal(controller.catalogue.state.sequence, sequence, "no event appended");
    assert.deepEqual(await fixture.drain("known-1"), [], "nothing sent to the other nodes");
  });

  it("R11: the broker holder's user list is sent in parts before its declaration, and stale parts of a longer list are purged", async () => {
    await fixture.enrol("bus");
    await fixture.send("module.register", { manifest: broker });
    await fixture.send("module.issue", { module: "broker" });
    await fixture.send("assign", { module: "broker", node: "bus" });
    // A part left by an earlier, longer list (index far past this one's last).
    const js = jetstream(fixture.operator);
    const stale = await js.publish(userListPartSubject("bus", 40), "stale", { headers: userListPartHeaders("0".repeat(64), 40, 41) });
    // The broker's host applies the list and reports it (reduced): the first push rotates the controller's password (R14).
    const answering = (async () => {
      for (;;) {
        const declaration = await waitForDeclaration(fixture, "bus");
        if (declaration.userListText !== undefined) {
          fixture.report("bus", String(declaration.digest));
          return declaration;
        }
      }
    })();
    const report = await controller.push({ nodes: ["bus"] });
    const declaration = await answering;
    assert.equal(outcome(report, "bus").outcome, "sent");
    assert.equal(declaration.digest, outcome(report, "bus").digest);
    const ref = declaration.userList as { digest: string; bytes: number; parts: number };
    const text = String(declaration.userListText);
    assert.match(text, /controller-mesh-controller/);
    assert.equal(Buffer.byteLength(text), ref.bytes);
    assert.equal(sha256Hex(text), ref.digest);
    const jsm = await jetstreamManager(fixture.operator);
    const last = await jsm.streams.getMessage(CONTROL_STREAM, { last_by_subj: userListPartSubject("bus", ref.parts - 1) });
    const sent = await jsm.streams.getMessage(CONTROL_STREAM, { last_by_subj: declarationSubject("bus") });
    assert.ok(last && sent && last.seq < sent.seq, "every part is stored before the declaration naming it");
    assert.ok(last.seq > stale.seq);
    const left = await jsm.streams.getMessage(CONTROL_STREAM, { last_by_subj: userListPartSubject("bus", 40) }).catch(() => null);
    assert.equal(left, null, "the stale part is purged");
  });
});

/** Reads the node's consumer until a declaration arrives (the host agent's job, reduced). */
/** Each node's simulated agent reports applying what it was last sent (R78: not behind by its report), once the stream stored them all. */
async function everyNodeApplied(fixture: ControllerFixture, controller: Controller): Promise<void> {
  const state = controller.catalogue.state;
  const sentTo = nodeNames(state.nodes).flatMap((node) => { const sent = lastSent(state.sent, node); return sent ? [[node, sent.digest] as const] : []; });
  for (const [node, digest] of sentTo) fixture.report(node, digest);
  const jsm = await jetstreamManager(fixture.operator);
  await waitFor(async () => {
    for (const [node, digest] of sentTo) {
      const stored = await jsm.streams.getMessage(REPORTS_STREAM, { last_by_subj: reportSubject(node) }).catch(() => null);
      if (stored?.json<{ digest: string }>().digest !== digest) return false;
    }
    return true;
  }, { timeoutMs: 5_000, name: "every node's report stored" });
}

async function waitForDeclaration(fixture: ControllerFixture, node: string): Promise<Record<string, unknown>> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const found = await fixture.drain(node);
    if (found.length > 0) return found.at(-1)!;
  }
  throw new Error(`no declaration for ${node} within 10 s`);
}

describe("push: the user list must reach the broker (R49)", () => {
  let server: NatsServer;
  let fixture: ControllerFixture;
  let operatorFile: string;

  before(async () => {
    server = await startNatsServer();
    fixture = await controllerFixture(server);
    await fixture.start();
    await fixture.send("module.register", { manifest: broker });
    await fixture.send("module.issue", { module: "broker" });
    operatorFile = join(fixture.dir, "operator.json");
    writeFileSync(operatorFile, JSON.stringify({ address: server.url, user: "operator-test", password: "unused" }), { mode: 0o600 });
  });
  after(async () => {
    await fixture?.close();
    await server?.stop();
  });

  /** `mesh push --json` as a person runs it: its exit code and report. */
  async function meshPush(): Promise<{ code: number; report: PushReport }> {
    let out = "";
    const io: CliIo = { stdout: { write: (s: string) => { out += s; } }, stderr: { write: () => undefined }, env: { MESH_CREDENTIAL: operatorFile } };
    const code = await runCli(["push", "--json"], io);
    return { code, report: JSON.parse(out) as PushReport };
  }

  it("R49: a push while nothing holds mesh-broker sends the nodes but fails, saying no user list reached the bus", async () => {
    await fixture.enrol("solo");
    const failed = await meshPush();
    assert.equal(failed.code, EXIT_REFUSED, "mesh push exits non-zero");
    assert.equal(failed.report.userList?.code, "no-broker-holder");
    assert.equal(outcome(failed.report, "solo").outcome, "sent", "the nodes are still sent (R30)");

    await fixture.send("assign", { module: "broker", node: "solo" });
    // The holder's host applies the list and reports it (the host agent's job, reduced): the push
    // waits for that report before it records what it sent.
    let answered = false;
    const answering = (async () => {
      while (!answered) {
        const declaration = (await fixture.drain("solo")).at(-1);
        if (declaration?.userList) {
          fixture.report("solo", String(declaration.digest));
          answered = true;
        }
      }
    })();
    const delivered = await meshPush();
    answered = true;
    await answering;
    assert.equal(delivered.code, EXIT_OK);
    assert.equal(delivered.report.userList, undefined);
  });

  it("a module assigned to the broker's holder but never issued is left out alone: the holder and the user list are still sent, and mesh push says so (exit 1)", async () => {
    await fixture.enrol("hold");
    await fixture.send("assign", { module: "broker", node: "hold" });
    await fixture.send("module.register", { manifest: { name: "unissued", version: "1.0.0" } });
    await fixture.send("assign", { module: "unissued", node: "hold" });
    let answered = false;
    const answering = (async () => {
      while (!answered) {
        for (const node of ["hold", "solo"]) {
          const declaration = (await fixture.drain(node)).at(-1);
          if (declaration?.userList) fixture.report(node, String(declaration.digest));
        }
      }
    })();
    const pushed = await meshPush();
    answered = true;
    await answering;
    assert.equal(pushed.code, EXIT_REFUSED, "the push says not everything was done");
    const hold = outcome(pushed.report, "hold");
    assert.equal(hold.outcome, "sent", "the holder is sent");
    assert.deepEqual(hold.modulesLeftOut?.map((m) => m.module), ["unissued"]);
    assert.equal(pushed.report.userList, undefined, "the user list reached the bus");
  });
});

type BrokerMesh = { fixture: ControllerFixture; controller: Controller & { lines: string[] }; close(): Promise<void> };

/** A controller on a nats-server of its own whose records hold the broker module, issued and assigned to `node` (enrolled). */
async function brokerHeldBy(node: string): Promise<BrokerMesh> {
  const server = await startNatsServer();
  let fixture: ControllerFixture | undefined;
  try {
    fixture = await controllerFixture(server);
    const controller = await fixture.start();
    await fixture.send("module.register", { manifest: broker });
    await fixture.send("module.issue", { module: "broker" });
    await fixture.enrol(node);
    await fixture.send("assign", { module: "broker", node });
    const started = fixture;
    return { fixture, controller, close: async () => { await started.close(); await server.stop(); } };
  } catch (error) {
    await fixture?.close().catch(() => undefined);
    await server.stop();
    throw error;
  }
}

describe("push: a server that missed the user list is repaired by the next push (R60)", () => {
  let mesh: BrokerMesh;
  let fixture: ControllerFixture;
  let controller: Controller & { lines: string[] };

  before(async () => {
    mesh = await brokerHeldBy("hub");
    ({ fixture, controller } = mesh);
  });
  after(() => mesh?.close());

  /**
   * A push with the holder's host reduced: every declaration "hub" gets is answered with a report
   * carrying `servers` (each server's outcome of its list); returns the push's report and how many
   * declarations the holder got.
   */
  async function pushAnswered(servers: Array<{ server: string; ok: boolean; error?: string }>): Promise<{ report: PushReport; got: number }> {
    let done = false;
    let got = 0;
    const answering = (async () => {
      while (!done) {
        for (const declaration of await fixture.drain("hub")) {
          got += 1;
          fixture.operator.publish(reportSubject("hub"), JSON.stringify({ node: "hub", digest: String(declaration.digest), ok: true, servers }));
        }
      }
    })();
    try {
      return { report: await controller.push({ wait: true, timeoutMs: 5_000 }), got };
    } finally {
      done = true;
      await answering;
    }
  }

  it("R60: a holder's report heard in the push naming a missed server makes the next push send it again, even when REPORTS never stored that report; a report with every server installed stops it", async () => {
    const first = await pushAnswered([{ server: "mesh-bus-1", ok: true }, { server: "mesh-bus-2", ok: false, error: "down" }]);
    assert.equal(outcome(first.report, "hub").outcome, "applied");
    assert.deepEqual(first.report.servers?.map((s) => [s.server, s.ok]), [["mesh-bus-1", true], ["mesh-bus-2", false]]);
    // The host's publish of that report timed out (a cluster moving leaders): the push heard it on
    // the report subject, but the stream holds none of it.
    await (await jetstreamManager(fixture.operator)).streams.purge(REPORTS_STREAM, { filter: reportSubject("hub") });

    const repaired = await pushAnswered([{ server: "mesh-bus-1", ok: true }, { server: "mesh-bus-2", ok: true }]);
    assert.ok(repaired.got > 0, `the holder is sent its list again: ${JSON.stringify(repaired.report.nodes)}`);
    assert.deepEqual(repaired.report.servers?.map((s) => [s.server, s.ok]), [["mesh-bus-1", true], ["mesh-bus-2", true]]);

    const after = await pushAnswered([{ server: "mesh-bus-1", ok: true }, { server: "mesh-bus-2", ok: true }]);
    assert.equal(after.got, 0, "once every server installed the list, the holder is not sent again");
    assert.equal(outcome(after.report, "hub").outcome, "unchanged");
  });
});

describe("push: every wait for reports shares one deadline (R32)", () => {
  let mesh: BrokerMesh;
  let fixture: ControllerFixture;
  let controller: Controller & { lines: string[] };

  before(async () => {
    mesh = await brokerHeldBy("down");
    ({ fixture, controller } = mesh);
  });
  after(() => mesh?.close());

  it("R32: a push whose broker's host is down waits about one --timeout in all, not once for the broker in the round and again from zero for the reports", async () => {
    // A clock of the test's own: each pause moves it on at once, so the time the push would have
    // waited is read off the clock, not measured.
    let virtual = 0;
    const clock: WaitClock = {
      now: () => virtual,
      sleep: async (ms) => { virtual += ms; await new Promise((resolve) => setImmediate(resolve)); },
    };
    const config = parseControllerConfig(fixture.env);
    const timeoutMs = 60_000;
    const report = await push({
      nc: controller.nc, catalogue: controller.catalogue, meshKey: fixture.meshKey, clock,
      compose: { controllerSubmits: config.controllerSubmits, replicas: config.replicas },
      log: { info: () => undefined, error: () => undefined },
    }, { wait: true, timeoutMs });
    assert.equal(outcome(report, "down").outcome, "timed-out");
    assert.ok(virtual >= timeoutMs, `it waits the whole --timeout for the broker's report (waited ${virtual} ms)`);
    assert.ok(virtual <= timeoutMs, `one deadline: waited ${virtual} ms of a ${timeoutMs} ms --timeout`);
  });
});
