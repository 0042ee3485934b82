/**
 * R51 against a real nats-server running the composed user list of a small mesh (the controller,
 * the operators ada and bob, the node vm): a command's actor is a fact the bus enforces. Commands
 * travel on `mesh.command.<principal>.<verb>`; each operator may publish only under its own name
 * (the server refuses the rest); the controller takes the actor from the subject's principal token
 * and serves a request only when its reply subject lies in that principal's own inbox. A request
 * whose reply points anywhere else is logged and dropped: nothing is appended, nothing is sent
 * there. `mesh explain` through the same controller says what the server does.
 */
import { enrolRequest } from "../support/enrol.ts";
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import type { NatsConnection } from "@nats-io/transport-node";
import { PermissionViolationError } from "@nats-io/nats-core";
import { jetstreamManager } from "@nats-io/jetstream";
import { connectToBus } from "../../src/bus/connect.ts";
import { composeBusUsers, renderUserList } from "../../src/compose/index.ts";
import { openCatalogue, type Catalogue } from "../../src/records/catalogue.ts";
import { serveCommands, type CommandServer } from "../../src/serve/server.ts";
import { askAs } from "../support/client.ts";
import { newMeshKey, openWithMeshKey, sealWithMeshKey } from "../../src/crypto/secrets.ts";
import { CATALOGUE_STREAM, CONTROLLER_NAME, busUser, catalogueSubject, commandSubject, inboxPrefix, inboxSubjects } from "../../src/names.ts";
import { watchViolations } from "../support/violations.ts";
import { startNatsServer, waitFor, type NatsServer } from "../support/natsServer.ts";
import { EXAMPLE_CONFIG, MeshBuilder } from "../unit/compose/exampleMesh.ts";

const CONTROLLER = busUser("controller", CONTROLLER_NAME);
const ADA = busUser("operator", "ada");
const BOB = busUser("operator", "bob");
const VM = busUser("node", "vm");

type Session = { nc: NatsConnection; violations: PermissionViolationError[] };
type Ok = { ok: true } & Record<string, unknown>;

describe("R51: a command's actor is a fact the bus enforces", () => {
  let server: NatsServer;
  let passwords: Record<string, string>;
  let controller: NatsConnection;
  let catalogue: Catalogue;
  let commands: CommandServer;
  const logged: string[] = [];
  const sessions: Session[] = [];

  async function dial(user: string): Promise<Session> {
    const nc = await connectToBus({ address: server.url, user, seed: passwords[user]! }, { name: `r51-${user}`, reconnect: false });
    const violations = watchViolations(nc);
    const session = { nc, violations };
    sessions.push(session);
    return session;
  }

  /** Sends a command as `user` the way the CLI does and returns the reply. */
  async function ask(user: string, verb: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
    const session = await dial(user);
    return await askAs(session.nc, user, verb, body, 10_000) as Record<string, unknown>;
  }

  /** The events recorded about node `name`, with their actors, read through a `history` query. */
  /** The node's events; none when the records never mention it (history answers not-found then). */
  async function historyOf(node: string): Promise<Array<{ type: string; actor: string }>> {
    const reply = await ask(ADA, "history", { kind: "node", id: node });
    if (!reply.ok && (reply as { error?: { code?: string } }).error?.code === "not-found") return [];
    assert.ok(reply.ok, JSON.stringify(reply));
    return (reply as Ok & { events: Array<{ type: string; actor: string }> }).events;
  }

  before(async () => {
    const records = new MeshBuilder().genesis().controller().operator("ada").operator("bob").node("vm");
    passwords = records.secrets;
    const users = composeBusUsers(records.state(), EXAMPLE_CONFIG);
    assert.ok(users.ok, "the small mesh composes a user list");
    server = await startNatsServer({ files: { "users.conf": renderUserList(users) }, config: `include "users.conf"` });
    controller = await connectToBus({ address: server.url, user: CONTROLLER, seed: passwords[CONTROLLER]! }, { name: "r51-controller" });
    catalogue = await openCatalogue(controller);
    for (const { commit } of records.commits) {
      const appended = await catalogue.transact(commit.commandId, () => ({ ok: true, entity: commit.entity, events: commit.events }));
      assert.ok(appended.ok, `record ${commit.commandId} appended`);
    }
    const meshKey = newMeshKey();
    commands = serveCommands(controller, catalogue, {
      sealSecret: (password) => sealWithMeshKey(meshKey, password),
      openSecret: (sealed) => openWithMeshKey(meshKey, sealed),
      now: () => new Date(),
      newId: () => randomUUID(),
      log: { info: (line) => { logged.push(line); }, error: (line) => { logged.push(line); } },
      compose: EXAMPLE_CONFIG,
    });
    await controller.flush();
  });
  after(async () => {
    for (const { nc } of sessions) if (!nc.isClosed()) await nc.close().catch(() => undefined);
    await commands?.stop();
    if (controller && !controller.isClosed()) await controller.close().catch(() => undefined);
    await server?.stop();
  });

  it("R51: (issue 9) an operator's node.enrol with its reply in node-vm's inbox appends nothing and delivers nothing there", async () => {
    // The control: node vm listens on its own inbox with its own credential.
    const vm = await dial(VM);
    const delivered: string[] = [];
    vm.nc.subscribe(inboxSubjects(VM), { callback: (_e, m) => { delivered.push(m.subject); } });
    await vm.nc.flush();

    const ada = await dial(ADA);
    const forged = `${inboxPrefix(VM)}.x`;
    ada.nc.publish(commandSubject(ADA, "node.enrol"), JSON.stringify(enrolRequest("intruder")), { reply: forged });
    await ada.nc.flush();
    // Requests are served one at a time in arrival order: once ada's next command is answered,
    // the forged one has been handled.
    const next = await askAs(ada.nc, ADA, "node.enrol", enrolRequest("honest"), 10_000);
    assert.ok(next.ok, JSON.stringify(next));
    await vm.nc.flush();

    assert.deepEqual(await historyOf("intruder"), [], "nothing was appended for the forged request");
    assert.deepEqual(delivered, [], "nothing was delivered into node-vm's inbox");
    assert.deepEqual(ada.violations, [], "ada published under her own name: the bus admitted it");
    assert.ok(logged.some((line) => line.includes("node.enrol") && line.includes("dropped")), logged.join("\n"));
  });

  it("R51: a reply subject outside the asker's inbox is never published to, even one the controller may publish (the records)", async () => {
    const jsm = await jetstreamManager(controller);
    const before = (await jsm.streams.info(CATALOGUE_STREAM)).state.last_seq;
    const ada = await dial(ADA);
    ada.nc.publish(commandSubject(ADA, "where"), "{}", { reply: catalogueSubject("node", "forged") });
    await ada.nc.flush();
    const next = await askAs(ada.nc, ADA, "where", {}, 10_000);
    assert.ok(next.ok, JSON.stringify(next));
    assert.equal((await jsm.streams.info(CATALOGUE_STREAM)).state.last_seq, before, "nothing was written into the records");
  });

  it("R51: an operator publishing under another principal's name is refused by the bus, and explain says so", async () => {
    for (const other of [BOB, VM, CONTROLLER]) {
      const ada = await dial(ADA);
      ada.nc.publish(commandSubject(other, "node.enrol"), "{}");
      await ada.nc.flush().catch(() => undefined);
      await waitFor(() => ada.violations.find((v) => v.operation === "publish"), { name: `the server refuses ${ADA} pub under ${other}'s name` });
      const explained = await ask(ADA, "explain", { kind: "operator", name: "ada", direction: "pub", subject: commandSubject(other, "node.enrol") });
      assert.equal(explained.allowed, false, JSON.stringify(explained));
    }
    const own = await ask(ADA, "explain", { kind: "operator", name: "ada", direction: "pub", subject: commandSubject(ADA, "node.enrol") });
    assert.equal(own.allowed, true, JSON.stringify(own));
    const vmOwn = await ask(ADA, "explain", { kind: "node", name: "vm", direction: "pub", subject: commandSubject(VM, "node.enrol") });
    assert.equal(vmOwn.allowed, false, "a node sends no commands, not even under its own name");
    const vm = await dial(VM);
    vm.nc.publish(commandSubject(VM, "node.enrol"), "{}");
    await vm.nc.flush().catch(() => undefined);
    await waitFor(() => vm.violations.find((v) => v.operation === "publish"), { name: "the server refuses node-vm pub under its own name" });
  });

  it("R51: the recorded actor is the subject's principal", async () => {
    const node = `n${randomUUID().slice(0, 8)}`;
    const reply = await ask(BOB, "node.enrol", enrolRequest(node));
    assert.ok(reply.ok, JSON.stringify(reply));
    const events = await historyOf(node);
    assert.ok(events.length > 0);
    assert.deepEqual([...new Set(events.map((e) => e.actor))], [BOB]);
  });
});
