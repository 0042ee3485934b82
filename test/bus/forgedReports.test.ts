/**
 * A node's forged reports (R43, R44, R64), against a real nats-server running an authorization
 * list and a real controller (test/support/controller.ts): nodes vm, web2 and evil are enrolled
 * through the controller with keys made here, the list the records compose for them is installed
 * on the bus, and evil dials with its own credential. The bus lets evil publish on its own report
 * subject only; whatever evil writes in the body there must not freeze the controller nor hand an
 * accepted restore any other node's key.
 */
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { NatsConnection } from "@nats-io/transport-node";
import { connectToBus } from "../../src/bus/connect.ts";
import { parseControllerConfig } from "../../src/config.ts";
import { composeBusUsers, renderUserList } from "../../src/compose/index.ts";
import { newNodeKeyPair, newUserKey } from "../../src/crypto/secrets.ts";
import { BOOTSTRAP_NKEY } from "../../src/genesis.ts";
import { busUser, principalKey, reportSubject } from "../../src/names.ts";
import type { AnyReply as Reply } from "../../src/contracts/verbs.ts";
import { credentialAt } from "../../src/projections/index.ts";
import { askAs } from "../support/client.ts";
import { enrolRequest } from "../support/enrol.ts";
import { controllerFixture, type ControllerFixture } from "../support/controller.ts";
import { startNatsServer, waitFor, type NatsServer } from "../support/natsServer.ts";
import { watchViolations } from "../support/violations.ts";

const BROKER = JSON.parse(readFileSync(fileURLToPath(new URL("../../examples/broker.json", import.meta.url)), "utf8")) as Record<string, unknown>;
const NODES = ["vm", "web2", "evil"] as const;
type Node = (typeof NODES)[number];

/** The bus's authorization: the fixture's operator and the controller at its genesis key, unrestricted; `nodes` as composed. */
function usersConf(nodeLines: readonly string[]): string {
  return [
    "authorization {",
    "  users = [",
    `    {user: "operator-test", password: "unused"}`,
    `    {nkey: "${BOOTSTRAP_NKEY}"}`,
    ...nodeLines,
    "  ]",
    "}",
    "",
  ].join("\n");
}

function codeOf(reply: Reply): string {
  return reply.ok ? "ok" : reply.error.code;
}

/**
 * A suite's bus with authorization and a controller fixture on it: vm, web2 and evil enrolled with
 * nkeys made here (their seeds kept), vm assigned the broker module (it holds mesh-broker) when
 * `brokerOnVm`, the composed list's node entries installed on the bus, and a connection of evil's
 * own with its own seed.
 */
function forgerSuite(options: { brokerOnVm: boolean }) {
  const suite = {
    server: undefined as unknown as NatsServer,
    fixture: undefined as unknown as ControllerFixture,
    keys: {} as Record<Node, { seed: string; publicKey: string }>,
    evil: undefined as unknown as NatsConnection,
    vm: undefined as unknown as NatsConnection,
  };
  before(async () => {
    suite.server = await startNatsServer({ files: { "users.conf": usersConf([]) }, config: `include "users.conf"` });
    suite.fixture = await controllerFixture(suite.server);
    const controller = await suite.fixture.start();
    for (const node of NODES) {
      suite.keys[node] = newUserKey();
      await suite.fixture.send("node.enrol", { node, publicKey: newNodeKeyPair().publicKey, nkey: suite.keys[node].publicKey });
    }
    if (options.brokerOnVm) {
      await suite.fixture.send("module.register", { manifest: BROKER });
      await suite.fixture.send("assign", { module: "broker", node: "vm" });
    }
    const config = parseControllerConfig(suite.fixture.env);
    const list = composeBusUsers(controller.catalogue.state, { controllerSubmits: config.controllerSubmits, replicas: config.replicas });
    assert.ok(list.ok, "the records compose a user list");
    const nodeUsers = new Set(NODES.map((n) => busUser("node", n)));
    const lines = renderUserList({ users: list.users.filter((u) => nodeUsers.has(u.user)) }).split("\n").filter((l) => l.trimStart().startsWith("{nkey"));
    assert.equal(lines.length, NODES.length);
    writeFileSync(join(suite.server.dir, "users.conf"), usersConf(lines));
    suite.server.reload();
    await controller.stop();
    const dial = (node: Node) => connectToBus({ address: suite.server.url, user: busUser("node", node), seed: suite.keys[node].seed }, { name: `forger-${node}`, reconnect: false });
    suite.evil = await waitFor(() => dial("evil").catch(() => undefined), { timeoutMs: 10_000, name: "evil admitted with its own key" });
    suite.vm = await dial("vm");
  });
  after(async () => {
    await suite.evil?.close().catch(() => undefined);
    await suite.vm?.close().catch(() => undefined);
    await suite.fixture?.close();
    await suite.server?.stop();
  });
  return suite;
}

describe("R43: a report speaks for the node of its subject, and a records sequence counts only with the controller's tag", () => {
  const suite = forgerSuite({ brokerOnVm: false });

  it("R43 R64: node evil, with its own credential, reports on its own subject that node vm applied records sequence 999999, and in its own name sequences no declaration carried; the controller ignores each, says each once in its log, and serves every verb, live and after a restart; push --wait does not take evil's report for vm's", async () => {
    const send = (verb: string, body: Record<string, unknown>) => askAs(suite.fixture.operator, "operator-test", verb, body);
    const controller = await suite.fixture.start();

    // The bus itself keeps evil to its own subject.
    const violations = watchViolations(suite.evil);
    suite.evil.publish(reportSubject("vm"), JSON.stringify({ v: 1, node: "vm", digest: "x", ok: true, recordsSequence: 999999 }));
    await waitFor(() => violations.find((v) => v.operation === "publish"), { name: "the bus refuses evil a publish on vm's report subject" });

    // evil's own declaration, as its agent receives it: what it could copy from.
    await controller.push();
    const own = (await suite.fixture.drain("evil")).at(-1)!;
    assert.equal(typeof own.recordsSequence, "number");

    const asVm = { v: 1, node: "vm", digest: "x", ok: true, recordsSequence: 999999 };
    const untagged = { v: 1, node: "evil", digest: "x", ok: true, recordsSequence: 888888 };
    // evil's own tag, on a sequence its declaration did not carry.
    const copiedTag = { v: 1, node: "evil", digest: own.digest, ok: true, recordsSequence: Number(own.recordsSequence) + 777777, recordsTag: own.recordsTag ?? "none" };
    for (const body of [asVm, asVm, untagged, untagged, copiedTag]) suite.evil.publish(reportSubject("evil"), JSON.stringify(body));
    await suite.evil.flush();
    // Heard in order on one subscription: once the last is in the log, the others were judged.
    await waitFor(() => controller.lines.some((l) => l.includes(String(Number(own.recordsSequence) + 777777))), { name: "the copied tag's report is logged" });
    assert.equal(controller.lines.filter((l) => l.includes(reportSubject("evil")) && l.includes("vm")).length, 1, `the report naming vm, once:\n${controller.lines.join("\n")}`);
    assert.equal(controller.lines.filter((l) => l.includes("888888")).length, 1, "the untagged claim, once");

    assert.equal(controller.catalogue.behind, null, "no evidence latched");
    assert.equal(codeOf(await send("nodes", {})), "ok");
    assert.equal(codeOf(await send("node.enrol", enrolRequest("beta"))), "ok");

    // push --wait: a report on evil's subject naming vm and vm's digest is not vm's report.
    await suite.fixture.drain("vm");
    const waited = controller.push({ nodes: ["vm"], wait: true, timeoutMs: 3_000 });
    const sent = await waitFor(async () => (await suite.fixture.drain("vm")).at(-1), { timeoutMs: 10_000, name: "vm's declaration sent" });
    suite.evil.publish(reportSubject("evil"), JSON.stringify({ v: 1, node: "vm", digest: String(sent.digest), ok: true }));
    await suite.evil.flush();
    const report = await waited;
    assert.ok(report.timedOut.includes("vm"), `vm never reported: evil's word for it does not count (${JSON.stringify(report.timedOut)})`);
    await controller.stop();

    const again = await suite.fixture.start();
    assert.equal(again.catalogue.behind, null, "evil's stored report is no evidence at the next start either");
    assert.equal(codeOf(await send("nodes", {})), "ok");
    await again.stop();
  });
});

describe("R44 R64: an accepted restore takes node keys from the broker holder's own report only", () => {
  const suite = forgerSuite({ brokerOnVm: true });

  it("R44 R64: evil reports, in its own name and in vm's, an installed list giving node-web2 and node-vm the attacker's key; vm (holding mesh-broker) reports its real list; replay --accept-restore changes no node key, names only vm's unknown user, and loses no range", async () => {
    const send = (verb: string, body: Record<string, unknown>) => askAs(suite.fixture.operator, "operator-test", verb, body);
    const controller = await suite.fixture.start();
    const user = (node: Node) => busUser("node", node);
    const real = Object.fromEntries(NODES.map((n) => [user(n), suite.keys[n].publicKey]));
    const late = newUserKey().publicKey;

    // vm, the broker's holder, restates the list its bus runs (one user the records do not know).
    suite.vm.publish(reportSubject("vm"), JSON.stringify({ v: 1, node: "vm", digest: "d", ok: true, users: [...Object.keys(real), "node-late"], keys: { ...real, "node-late": late } }));
    await suite.vm.flush();

    const attacker = newUserKey().publicKey;
    const forgedList = { users: [...Object.keys(real), "node-ghost"], keys: { ...real, [user("web2")]: attacker, [user("vm")]: attacker, "node-ghost": attacker } };
    suite.evil.publish(reportSubject("evil"), JSON.stringify({ v: 1, node: "vm", digest: "x", ok: true, recordsSequence: 2000001, ...forgedList }));
    suite.evil.publish(reportSubject("evil"), JSON.stringify({ v: 1, node: "evil", digest: "x", ok: true, recordsSequence: 2000000, ...forgedList }));
    await suite.evil.flush();
    await waitFor(() => controller.lines.some((l) => l.includes("2000000")), { name: "evil's own-name report is logged" });
    assert.equal(codeOf(await send("nodes", {})), "ok", "the controller serves");

    const accepted = await send("replay", { acceptRestore: true }) as Record<string, unknown>;
    assert.equal(accepted.ok, true, JSON.stringify(accepted));
    assert.equal(accepted.lost, null, "no lost range from evil's word");
    assert.deepEqual(accepted.unknownToRecords, ["node-late"], "the broker holder's list is the one read");
    const state = controller.catalogue.state;
    for (const node of NODES) {
      assert.equal(credentialAt(state.credentials, principalKey("node", node))?.nkey, suite.keys[node].publicKey, `node ${node} keeps its own key`);
    }
    assert.ok(!(accepted.rotated as Array<{ kind: string }>).some((p) => p.kind === "node"), "no node rotated");
    assert.equal(codeOf(await send("nodes", {})), "ok");
    await controller.stop();
  });
});
