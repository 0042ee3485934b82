/**
 * The composed user list enforced by a real nats-server (issue 4): for every principal kind of the
 * example mesh, what it is granted works and what it is not is refused by the server itself.
 *
 * One server for the file, started in before() with the composed include file; its streams and
 * consumers (the composed topology) are raised by the controller's own account, which proves the
 * controller's grants raise the bus (R21). Every refused check dials a fresh connection: nats.js
 * drops a connection after repeated authorization errors, and each refusal is read from the
 * connection's status stream (a PermissionViolationError naming the subject).
 */
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { connect, nkeyAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import { PermissionViolationError } from "@nats-io/nats-core";
import { newUserKey } from "../../src/crypto/secrets.ts";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { composeBusUsers, composeTopology, renderUserList, type BusUsers } from "../../src/compose/index.ts";
import {
  ALL_SUBJECTS, CATALOGUE_STREAM, CONTROL_STREAM, CONTROLLER_NAME, EVENTS_STREAM, SHARED_INBOX_SUBJECTS, busUser, commandSubject,
  declarationConsumer, declarationSubject, deliverSubject, userListPartSubject, eventSubject, followConsumer, inboxPrefix, inboxSubjects,
  pullGrants, reportSubject, streamUpdatedAdvisory, toolSubject, workConsumer, workStream, workSubject,
} from "../../src/names.ts";
import { natsServerBinary, startNatsServer, waitFor, type NatsServer } from "../support/natsServer.ts";
import { EXAMPLE_CONFIG, MeshBuilder, exampleMesh } from "../unit/compose/exampleMesh.ts";

const CONTROLLER = busUser("controller", CONTROLLER_NAME);
const OPERATOR = busUser("operator", "ada");
const BUILDER = busUser("builder", "ci");
const ALPHA = busUser("node", "alpha");
const BETA = busUser("node", "beta");
const SHOWCASE = busUser("module", "showcase");
const BUILD_MACHINE = busUser("module", "build-machine");
const ARTIFACTS = busUser("module", "artifact-store");
const PACKET_FILTER = busUser("module", "packet-filter");

describe("composed permissions enforced by nats-server", () => {
  let server: NatsServer;
  let passwords: Record<string, string>;
  let list: BusUsers;
  const open: NatsConnection[] = [];

  type Session = { nc: NatsConnection; violations: PermissionViolationError[] };
  async function dial(user: string): Promise<Session> {
    const nc = await connect({ servers: server.url, authenticator: nkeyAuthenticator(new TextEncoder().encode(passwords[user]!)), inboxPrefix: inboxPrefix(user), reconnect: false });
    open.push(nc);
    const violations: PermissionViolationError[] = [];
    void (async () => {
      for await (const status of nc.status()) {
        if (status.type === "error" && status.error instanceof PermissionViolationError) violations.push(status.error);
      }
    })();
    return { nc, violations };
  }
  async function close(session: Session): Promise<void> {
    if (!session.nc.isClosed()) await session.nc.close();
  }

  async function allowedPub(user: string, subject: string): Promise<void> {
    const s = await dial(user);
    try {
      s.nc.publish(subject, "x");
      await s.nc.flush();
      assert.deepEqual(s.violations.map((v) => v.message), [], `${user} pub ${subject}`);
    } finally { await close(s); }
  }
  async function allowedSub(user: string, subject: string): Promise<void> {
    const s = await dial(user);
    try {
      s.nc.subscribe(subject);
      await s.nc.flush();
      assert.deepEqual(s.violations.map((v) => v.message), [], `${user} sub ${subject}`);
    } finally { await close(s); }
  }
  async function refusedPub(user: string, subject: string): Promise<void> {
    const s = await dial(user);
    try {
      s.nc.publish(subject, "x");
      await s.nc.flush().catch(() => undefined);
      await waitFor(() => s.violations.find((v) => v.operation === "publish" && v.subject === subject), { name: `${user} refused pub ${subject}` });
    } finally { await close(s); }
  }
  async function refusedSub(user: string, subject: string): Promise<void> {
    const s = await dial(user);
    try {
      s.nc.subscribe(subject);
      await s.nc.flush().catch(() => undefined);
      await waitFor(() => s.violations.find((v) => v.operation === "subscription" && v.subject === subject), { name: `${user} refused sub ${subject}` });
    } finally { await close(s); }
  }

  before(async () => {
    const mesh = exampleMesh();
    passwords = mesh.secrets;
    list = composeBusUsers(mesh.state, EXAMPLE_CONFIG);
    assert.ok(list.ok, "the example mesh composes a user list");
    const text = renderUserList(list);
    server = await startNatsServer({ files: { "users.conf": text }, config: `include "users.conf"` });
    // the include file is valid on its own, as the broker's holder checks it before a reload
    const checkFile = join(server.dir, "check-users.conf");
    writeFileSync(checkFile, text);
    const check = spawnSync(natsServerBinary(), ["-t", "-c", checkFile], { encoding: "utf8" });
    assert.equal(check.status, 0, check.stderr + check.stdout);
    // R21: the controller's composed grants raise the composed topology, streams before consumers
    const controller = await dial(CONTROLLER);
    const jsm = await jetstreamManager(controller.nc);
    const topology = composeTopology(mesh.state, EXAMPLE_CONFIG);
    for (const stream of topology.streams) await jsm.streams.add(stream);
    for (const consumer of topology.consumers) await jsm.consumers.add(consumer.stream, consumer.config);
    await close(controller);
  });
  after(async () => {
    for (const nc of open) if (!nc.isClosed()) await nc.close().catch(() => undefined);
    await server?.stop();
  });

  it("R12: a principal without a credential cannot dial the bus, and a user list with no users is refused", async () => {
    const bare = new MeshBuilder().genesis().node("delta", false).state();
    const empty = composeBusUsers(bare, EXAMPLE_CONFIG);
    assert.equal(empty.ok, false);
    if (!empty.ok) assert.deepEqual(empty.leftOut.map((l) => l.principal.name).sort(), ["delta", CONTROLLER_NAME].sort());
    await assert.rejects(connect({ servers: server.url, authenticator: nkeyAuthenticator(new TextEncoder().encode(newUserKey().seed)), reconnect: false }));
  });

  it("R2: a node pulls, acks and reports with only its composed grants; another node's consumer is refused", async () => {
    const controller = await dial(CONTROLLER);
    // A user-list part, then the declaration naming it: one consumer, the same three grants (R2, R22).
    await jetstream(controller.nc).publish(userListPartSubject("beta", 0), "part");
    await jetstream(controller.nc).publish(userListPartSubject("alpha", 0), "someone else's part");
    await jetstream(controller.nc).publish(declarationSubject("beta"), JSON.stringify({ node: "beta" }));
    const node = await dial(BETA);
    const consumer = await jetstream(node.nc).consumers.get(CONTROL_STREAM, declarationConsumer("beta"));
    const got: string[] = [];
    while (got.length < 2) {
      const batch = await consumer.fetch({ max_messages: 2, expires: 2_000 });
      let none = true;
      for await (const m of batch) { got.push(m.subject); m.ack(); none = false; }
      if (none) break;
    }
    assert.deepEqual(got, [userListPartSubject("beta", 0), declarationSubject("beta")]);
    await node.nc.flush();
    node.nc.publish(reportSubject("beta"), "applied");
    await node.nc.flush();
    assert.deepEqual(node.violations, []);
    const jsm = await jetstreamManager(controller.nc);
    await waitFor(async () => (await jsm.consumers.info(CONTROL_STREAM, declarationConsumer("beta"))).num_ack_pending === 0 && (await jsm.consumers.info(CONTROL_STREAM, declarationConsumer("beta"))).ack_floor.stream_seq >= 1, { name: "node ack recorded" });
    await close(node);
    await close(controller);
    for (const subject of pullGrants(CONTROL_STREAM, declarationConsumer("alpha")).publish) {
      await refusedPub(BETA, subject.replace(/>$/, "1.1.1.1.1"));
    }
    await refusedPub(BETA, reportSubject("alpha"));
    await refusedPub(BETA, "$JS.API.STREAM.LIST");
    // it answers `mesh logs` on an operator's inbox, and writes into no other principal's
    await allowedPub(BETA, `${inboxPrefix(OPERATOR)}.x`);
    await refusedPub(BETA, `${inboxPrefix(SHOWCASE)}.x`);
  });

  it("R2 R4: a module binds its pull consumer, fetches and acks with only its composed grants", async () => {
    const submitter = await dial(SHOWCASE);
    await jetstream(submitter.nc).publish(workSubject("mesh-build", "build"), "build it");
    const holder = await dial(BUILD_MACHINE);
    const work = await jetstream(holder.nc).consumers.get(workStream("mesh-build"), workConsumer("mesh-build"));
    const batch = await work.fetch({ max_messages: 1, expires: 2_000 });
    const got: string[] = [];
    for await (const m of batch) { got.push(m.string()); await m.ackAck(); }
    assert.deepEqual(got, ["build it"]);
    // the holder announces the outcome; the follower receives it through its own consumer
    await jetstream(holder.nc).publish(eventSubject("mesh-build", "built"), "built it");
    const follow = await jetstream(submitter.nc).consumers.get(EVENTS_STREAM, followConsumer("showcase", "mesh-build", "built"));
    const events = await follow.fetch({ max_messages: 1, expires: 2_000 });
    const heard: string[] = [];
    for await (const m of events) { heard.push(m.string()); await m.ackAck(); }
    assert.deepEqual(heard, ["built it"]);
    assert.deepEqual([...submitter.violations, ...holder.violations], []);
    await close(submitter);
    await close(holder);
    const controller = await dial(CONTROLLER);
    const jsm = await jetstreamManager(controller.nc);
    assert.equal((await jsm.streams.info(workStream("mesh-build"))).state.messages, 0, "acked work leaves the queue");
    await close(controller);
  });

  it("R4 R16 R18: a module is refused another module's work queue, work it does not use, events it does not follow", async () => {
    await refusedPub(SHOWCASE, pullGrants(workStream("mesh-build"), workConsumer("mesh-build")).publish[1]!);
    await refusedPub(SHOWCASE, pullGrants(workStream("artifacts"), workConsumer("artifacts")).publish[0]!);
    await refusedPub(SHOWCASE, workSubject("artifacts", "store"));
    await refusedSub(SHOWCASE, eventSubject("artifacts", "stored"));
    await refusedSub(SHOWCASE, eventSubject("mesh-build", "built"));
    await refusedPub(SHOWCASE, eventSubject("mesh-build", "built"));
    await refusedPub(SHOWCASE, `$JS.API.CONSUMER.CREATE.${EVENTS_STREAM}`);
    await refusedPub(BUILD_MACHINE, workSubject("mesh-build", "build"));
    await refusedPub(ARTIFACTS, pullGrants(EVENTS_STREAM, followConsumer("showcase", "mesh-build", "built")).publish[1]!);
    await refusedPub(PACKET_FILTER, reportSubject("alpha"));
    await refusedSub(SHOWCASE, deliverSubject("anything"));
  });

  it("R33: every principal kind is refused >, _INBOX.> and another principal's inbox, and allowed its own", async () => {
    for (const user of [CONTROLLER, OPERATOR, BUILDER, ALPHA, SHOWCASE, PACKET_FILTER]) {
      await refusedSub(user, ALL_SUBJECTS);
      await refusedSub(user, SHARED_INBOX_SUBJECTS);
      await refusedSub(user, inboxSubjects(user === OPERATOR ? BETA : OPERATOR));
      await allowedSub(user, inboxSubjects(user));
    }
  });

  it("R33: request/reply works on own inboxes: the controller answers commands, a module its tool, each by its grant on the operator's inbox", async () => {
    const controller = await dial(CONTROLLER);
    controller.nc.subscribe(commandSubject(OPERATOR, "test.ping"), { callback: (_e, m) => { m.respond("pong"); } });
    const showcase = await dial(SHOWCASE);
    showcase.nc.subscribe(toolSubject("showcase", "hello"), { callback: (_e, m) => { m.respond("hello"); } });
    await controller.nc.flush();
    await showcase.nc.flush();
    const operator = await dial(OPERATOR);
    assert.equal((await operator.nc.request(commandSubject(OPERATOR, "test.ping"), "", { timeout: 2_000 })).string(), "pong");
    assert.equal((await operator.nc.request(toolSubject("showcase", "hello"), "", { timeout: 2_000 })).string(), "hello");
    assert.deepEqual([...controller.violations, ...showcase.violations, ...operator.violations], []);
    await close(operator);
    await close(showcase);
    await close(controller);
    // a module with a tool writes into the inbox of those who may call it (the operator), no other
    await allowedPub(SHOWCASE, `${inboxPrefix(OPERATOR)}.reply`);
    await refusedPub(SHOWCASE, `${inboxPrefix(ALPHA)}.unasked`);
    // the controller may write into an operator's inbox (its explicit reply grant: a reload forgets
    // allow_responses), and into no other principal's
    await allowedPub(CONTROLLER, `${inboxPrefix(OPERATOR)}.reply`);
    await refusedPub(CONTROLLER, `${inboxPrefix(ALPHA)}.unasked`);
    await refusedPub(CONTROLLER, `${inboxPrefix(SHOWCASE)}.unasked`);
  });

  it("R15 R19: the controller submits its stated seats' work, hears their outcome, and nothing of other seats", async () => {
    await allowedPub(CONTROLLER, workSubject("mesh-build", "build"));
    await allowedSub(CONTROLLER, eventSubject("mesh-build", "built"));
    await refusedPub(CONTROLLER, workSubject("artifacts", "store"));
    await refusedSub(CONTROLLER, eventSubject("artifacts", "stored"));
  });

  it("R33: an operator sends commands and nothing of $JS; a builder submits builds and nothing else", async () => {
    await allowedPub(OPERATOR, commandSubject(OPERATOR, "node.enrol"));
    await refusedPub(OPERATOR, "$JS.API.INFO");
    await refusedSub(OPERATOR, commandSubject(OPERATOR, "node.enrol"));
    await refusedPub(OPERATOR, declarationSubject("alpha"));
    await allowedPub(BUILDER, workSubject("mesh-build", "build"));
    await allowedSub(BUILDER, eventSubject("mesh-build", "built"));
    await refusedPub(BUILDER, "$JS.API.INFO");
    await refusedPub(BUILDER, workSubject("artifacts", "store"));
  });

  it("R47: the controller's own credential cannot delete CATALOGUE (the bus refuses the API call); other streams' API stays its own", async () => {
    const controller = await dial(CONTROLLER);
    try {
      const jsm = await jetstreamManager(controller.nc);
      await assert.rejects(jsm.streams.delete(CATALOGUE_STREAM));
      await waitFor(() => controller.violations.find((v) => v.operation === "publish" && v.subject === `$JS.API.STREAM.DELETE.${CATALOGUE_STREAM}`), { name: "delete CATALOGUE refused" });
      assert.equal((await jsm.streams.info(CATALOGUE_STREAM)).config.name, CATALOGUE_STREAM, "the records are still there");
    } finally { await close(controller); }
    const again = await dial(CONTROLLER);
    try {
      const jsm = await jetstreamManager(again.nc);
      await jsm.streams.add({ name: "R47_SCRATCH", subjects: ["r47.scratch"] });
      assert.equal(await jsm.streams.delete("R47_SCRATCH"), true, "another stream is still the controller's to delete");
    } finally { await close(again); }
  });

  it("R47: the controller's own credential cannot change CATALOGUE's configuration (a limit of max_msgs: 3 is refused by the bus), nor create it again with another", async () => {
    const controller = await dial(CONTROLLER);
    try {
      const jsm = await jetstreamManager(controller.nc);
      const config = (await jsm.streams.info(CATALOGUE_STREAM)).config;
      await assert.rejects(jsm.streams.update(CATALOGUE_STREAM, { ...config, max_msgs: 3 }));
      await waitFor(() => controller.violations.find((v) => v.operation === "publish" && v.subject === `$JS.API.STREAM.UPDATE.${CATALOGUE_STREAM}`), { name: "update CATALOGUE refused" });
      await assert.rejects(jsm.streams.add({ ...config, max_msgs: 3 }), "the server refuses a second CATALOGUE with another configuration (name in use)");
      assert.equal((await jsm.streams.info(CATALOGUE_STREAM)).config.max_msgs, -1, "the records keep no limit");
    } finally { await close(controller); }
  });

  it("R47: the controller hears when CATALOGUE's configuration changes (the stream's update advisory); a module does not", async () => {
    await allowedSub(CONTROLLER, streamUpdatedAdvisory(CATALOGUE_STREAM));
    await refusedSub(SHOWCASE, streamUpdatedAdvisory(CATALOGUE_STREAM));
  });

  it("R24: a module with nothing to publish is refused every publish", async () => {
    await refusedPub(PACKET_FILTER, eventSubject("packet-filter", "anything"));
    await refusedPub(PACKET_FILTER, commandSubject(PACKET_FILTER, "node.enrol"));
  });
});
