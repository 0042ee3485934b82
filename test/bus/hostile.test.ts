/**
 * R65 against real nats-servers running the example mesh's composed user list (issue 25): nothing a
 * principal can send, with its own grants, stops or wedges the controller (its command server, its
 * report watch, its records' advisory watch, its lease) or a host agent. nats-server delivers a
 * JetStream message to whatever reply subject a pull request names, keeping the message's stored
 * subject, so a node (or a module with a pull grant) can put its own pending message on any subject
 * a victim listens on. The corpus (test/support/hostileMesh.ts) goes from every principal kind;
 * afterwards each victim still serves a real request, and what it dropped it said in few, short
 * lines. Once on one server and once on a three-server cluster, two controllers in one queue group.
 */
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { startNatsServer, waitFor, type NatsServer } from "../support/natsServer.ts";
import { startNatsCluster, type NatsCluster } from "../support/natsCluster.ts";
import { nkeyAuthenticator } from "@nats-io/transport-node";
import { inboxPrefix } from "../../src/names.ts";
import { CONTROLLER, attack, hostileUserList, realQuery, startHostileMesh, type HostileMesh } from "../support/hostileMesh.ts";

/** The longest line a victim may write about a message (R65: one bounded line). */
const LONGEST_LINE = 600;
/** The most lines the whole corpus may cost the victims' logs (it is ~100 messages, many of ~1 MiB). */
const MOST_LINES = 150;

/** The attack and the checks, shared by the one-server and the cluster suites. */
async function survives(mesh: HostileMesh): Promise<void> {
  const first = await mesh.declare();
  const report = await mesh.host.waitForReport(first);
  const before = mesh.lines.length;
  await attack(mesh, new TextEncoder().encode(JSON.stringify(report)));
  for (const nc of mesh.controllers) await nc.flush();
  // The controller still answers a real query within 1 s of the corpus (R65: not stopped, not wedged).
  await realQuery(mesh, 1_000);
  // The host agent still applies a new declaration, within 1 s too.
  const next = await mesh.declare();
  await mesh.host.waitForReport(next, 1_000);
  assert.deepEqual(mesh.leaseLost, [], "the controller kept its lease");
  // Each command server's loop is alive: stop() awaits it, and a loop that threw rejects here.
  for (const commands of mesh.commands) await commands.stop();
  const said = mesh.lines.slice(before);
  const long = said.filter((line) => line.length > LONGEST_LINE);
  assert.deepEqual(long.map((line) => `${line.slice(0, 120)}... (${line.length} chars)`), [], "every line is bounded");
  assert.ok(said.length <= MOST_LINES, `the corpus cost ${said.length} log lines, at most ${MOST_LINES}:\n${said.slice(0, 40).join("\n")}`);
  // Each victim met the corpus (else this test proves nothing of it): its drop lines name it.
  const shown = said.slice(0, 60).join("\n");
  for (const victim of ["the command subscription", "the report watch", "the records' advisory watch"]) {
    assert.ok(said.some((line) => line.includes(`reached ${victim}: dropped`)), `${victim} dropped the messages pulled to it:\n${shown}`);
  }
  assert.ok(mesh.hostLines.some((line) => line.includes("not applied")), `alpha refused the hostile declarations:\n${shown}`);
}

describe("R65: hostile input from every principal kind, one server", () => {
  let server: NatsServer;
  let mesh: HostileMesh;
  before(async () => {
    const list = hostileUserList();
    server = await startNatsServer({ files: { "users.conf": list.text }, config: `include "users.conf"` });
    mesh = await startHostileMesh([server.url], list.secrets);
  });
  after(async () => {
    await mesh?.stop();
    await server?.stop();
  });

  it("R65: the controller's subscribers and a host agent drop every hostile message in a bounded line and keep serving", async () => {
    await survives(mesh);
  });
});

describe("R65: hostile input from every principal kind, three-server cluster", () => {
  let cluster: NatsCluster;
  let mesh: HostileMesh;
  before(async () => {
    const list = hostileUserList();
    // The readiness probe dials as the controller (the JetStream API is its alone).
    const readyAs = { authenticator: nkeyAuthenticator(new TextEncoder().encode(list.secrets[CONTROLLER]!)), inboxPrefix: inboxPrefix(CONTROLLER) };
    cluster = await startNatsCluster(3, { config: list.text, readyAs });
    mesh = await startHostileMesh(cluster.urls, list.secrets);
    await waitFor(() => mesh.host.bound(), { name: "alpha bound on the cluster" });
  });
  after(async () => {
    await mesh?.stop();
    await cluster?.stop();
  });

  it("R65: two controllers in one queue group and a host agent drop every hostile message and keep serving", async () => {
    await survives(mesh);
  });
});
