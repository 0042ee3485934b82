/**
 * Replies owed across a reload (issue field note: "A reload resets allow_responses tracking: a reply
 * owed across a reload is denied. Commands must survive a reload").
 *
 * A real nats-server runs the composed user list of a small mesh. The controller's account serves a
 * slow command: the test holds its handler until the bus has reloaded a changed user list (a node
 * added), or until the controller's connection was dropped by a reload that replaced its password
 * (the R14 rotation) and re-established with the new one. The operator's reply must still arrive,
 * and the controller must meet no permission violation: its reply is allowed by an explicit grant
 * on the asker's own inbox (R33), not by per-connection allow_responses tracking.
 */
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Msg, NatsConnection } from "@nats-io/transport-node";
import { PermissionViolationError } from "@nats-io/nats-core";
import { composeBusUsers, renderUserList } from "../../src/compose/index.ts";
import { connectToBus } from "../../src/bus/connect.ts";
import { newUserKey } from "../../src/crypto/secrets.ts";
import { configLoadTime } from "../../src/host/index.ts";
import { COMMAND_SUBJECTS, CONTROLLER_NAME, busUser, commandSubject } from "../../src/names.ts";
import { startNatsServer, waitFor, type NatsServer } from "../support/natsServer.ts";
import { EXAMPLE_CONFIG, MeshBuilder } from "../unit/compose/exampleMesh.ts";

const CONTROLLER = busUser("controller", CONTROLLER_NAME);
const OPERATOR = busUser("operator", "ada");
const USERS_FILE = "users.conf";

describe("R33: a command's reply survives a reload of the user list", () => {
  let server: NatsServer;
  let mesh: MeshBuilder;
  let controllerPassword: string;
  let controller: NatsConnection;
  let operator: NatsConnection;
  const violations: PermissionViolationError[] = [];
  const statuses: string[] = [];
  /** Requests the controller received and has not answered yet. */
  const owed: Msg[] = [];

  /** Writes the composed list of the mesh as it is now and has the bus reload it; resolves once it did. */
  async function reloadComposedList(): Promise<void> {
    const list = composeBusUsers(mesh.state(), EXAMPLE_CONFIG);
    assert.ok(list.ok, "the mesh composes a user list");
    const monitor = `http://127.0.0.1:${server.monitorPort}`;
    const before = await configLoadTime(monitor);
    writeFileSync(join(server.dir, USERS_FILE), renderUserList(list));
    server.reload();
    await waitFor(async () => (await configLoadTime(monitor)) !== before, { timeoutMs: 10_000, name: "the bus reloaded the user list" });
  }

  /** Sends `verb` as the operator and waits until the controller holds the request, unanswered. */
  async function askAndHold(verb: string): Promise<{ reply: Promise<Msg> }> {
    const held = owed.length;
    const reply = operator.request(commandSubject(OPERATOR, verb), "", { timeout: 15_000 });
    reply.catch(() => undefined);
    await waitFor(() => owed.length > held, { name: `the controller received ${verb}` });
    return { reply };
  }

  /** The reply's text, or `refused: <violation>` as soon as the controller's reply is refused. */
  async function answerOf(reply: Promise<Msg>): Promise<string> {
    let answer: string | undefined;
    reply.then((m) => { answer = m.string(); }, (error: unknown) => { answer = `no reply: ${String(error)}`; });
    return waitFor(() => answer ?? (violations[0] && `refused: ${violations[0].message}`), { timeoutMs: 20_000, name: "the reply or its refusal" });
  }

  before(async () => {
    mesh = new MeshBuilder().genesis().controller().operator("ada").node("alpha");
    controllerPassword = mesh.secrets[CONTROLLER]!;
    const list = composeBusUsers(mesh.state(), EXAMPLE_CONFIG);
    assert.ok(list.ok);
    server = await startNatsServer({ files: { [USERS_FILE]: renderUserList(list) }, config: `include "${USERS_FILE}"` });
    const address = server.url;
    // The controller dials as it does in production: its password read at every reconnect (R14).
    controller = await connectToBus(
      { address, user: CONTROLLER, password: controllerPassword },
      { name: "test-controller", secret: () => controllerPassword },
    );
    void (async () => {
      for await (const status of controller.status()) {
        statuses.push(status.type);
        if (status.type === "error" && status.error instanceof PermissionViolationError) violations.push(status.error);
      }
    })();
    controller.subscribe(COMMAND_SUBJECTS, { callback: (_error, msg) => { owed.push(msg); } });
    await controller.flush();
    operator = await connectToBus({ address, user: OPERATOR, seed: mesh.secrets[OPERATOR]! }, { name: "test-operator" });
  });
  after(async () => {
    await operator?.close().catch(() => undefined);
    await controller?.close().catch(() => undefined);
    await server?.stop();
  });

  it("R33: the bus reloads a changed user list while a slow command's reply is owed; the reply still arrives", async () => {
    violations.length = 0;
    const { reply } = await askAndHold("slow");
    mesh.node("delta"); // the user list changes: a node joins, as a push composes it
    await reloadComposedList();
    owed.shift()!.respond("done");
    assert.equal(await answerOf(reply), "done");
    await controller.flush();
    assert.deepEqual(violations.map((v) => v.message), [], "the controller's reply was allowed");
  });

  it("R33 R14: the controller's connection is dropped by a reload that rotates its password and re-established while a reply is owed; the reply still arrives", async () => {
    violations.length = 0;
    const { reply } = await askAndHold("rotate");
    const count = (type: string) => statuses.filter((s) => s === type).length;
    const [disconnects, reconnects] = [count("disconnect"), count("reconnect")];
    const rotated = newUserKey();
    mesh.commit("controller", CONTROLLER_NAME, {
      type: "CredentialRotated", principal: { kind: "controller", name: CONTROLLER_NAME }, user: CONTROLLER,
      nkey: rotated.publicKey, sealed: "sealed:rotated", address: server.url,
    });
    controllerPassword = rotated.seed; // what the controller dials with from now on (R14)
    await reloadComposedList();
    await waitFor(() => count("reconnect") > reconnects, { timeoutMs: 15_000, name: "the controller reconnected with its new password" });
    assert.ok(count("disconnect") > disconnects, "the reload dropped the controller's connection");
    owed.shift()!.respond("rotated");
    assert.equal(await answerOf(reply), "rotated");
    await controller.flush();
    assert.deepEqual(violations.map((v) => v.message), [], "the controller's reply was allowed on its new connection");
  });
});
