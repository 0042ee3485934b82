/**
 * R33 against a real nats-server running the composed user list of a small mesh (the controller,
 * the operator ada, nodes alpha and beta): the controller, dialed with its composed credential,
 * serves commands from a catalogue holding the very records the list was composed from. The
 * operator enrols a node; the reply carries the fresh credential. Node beta, with only its composed
 * grants, tries to subscribe to the operator's inbox, to every principal's inbox and to `_INBOX.>`:
 * the server refuses each, and beta reads nothing of the reply, while a connection that holds the
 * operator's own credential (the control) does see it. `mesh explain` through the same controller
 * says the same as the server.
 */
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { PermissionViolationError } from "@nats-io/nats-core";
import { connectToBus } from "../../src/bus/connect.ts";
import { composeBusUsers, renderUserList } from "../../src/compose/index.ts";
import { openCatalogue, type Catalogue } from "../../src/records/catalogue.ts";
import { serveCommands, type CommandServer } from "../../src/serve/server.ts";
import { askAs } from "../support/client.ts";
import { runCli } from "../../src/cli/run.ts";
import { EXIT_OK, EXIT_REFUSED, type CliIo } from "../../src/cli/context.ts";
import { newMeshKey, newNodeKeyPair, newUserKey, openWithMeshKey, secretMatches, sealWithMeshKey } from "../../src/crypto/secrets.ts";
import {
  ALL_SUBJECTS, CONTROLLER_NAME, SHARED_INBOX_SUBJECTS, busUser, commandSubject, inboxSubjects, principalKey, reportSubject,
} from "../../src/names.ts";
import { watchViolations } from "../support/violations.ts";
import { startNatsServer, waitFor, type NatsServer } from "../support/natsServer.ts";
import { EXAMPLE_CONFIG, MeshBuilder } from "../unit/compose/exampleMesh.ts";
import { credentialAt } from "../../src/projections/index.ts";

const CONTROLLER = busUser("controller", CONTROLLER_NAME);
const OPERATOR = busUser("operator", "ada");
const BETA = busUser("node", "beta");

/** A connection with the permission violations the server reported on it. */
type Session = { nc: NatsConnection; violations: PermissionViolationError[] };

describe("R33: a reply carrying a fresh credential reaches only its asker", () => {
  let server: NatsServer;
  let passwords: Record<string, string>;
  let controller: NatsConnection;
  let catalogue: Catalogue;
  let commands: CommandServer;
  let dir: string;
  let operatorFile: string;
  const sessions: Session[] = [];

  async function dial(user: string): Promise<Session> {
    const nc = await connectToBus({ address: server.url, user, seed: passwords[user]! }, { name: `r33-${user}`, reconnect: false });
    const violations = watchViolations(nc);
    const session = { nc, violations };
    sessions.push(session);
    return session;
  }

  /** Runs `mesh <argv>` in-process with the operator's credential. */
  async function mesh(...argv: string[]): Promise<{ code: number; out: string }> {
    let out = "";
    const io: CliIo = { stdout: { write: (s: string) => { out += s; } }, stderr: { write: (s: string) => { out += s; } }, env: { MESH_CREDENTIAL: operatorFile } };
    return { code: await runCli(argv, io), out };
  }

  before(async () => {
    // The small mesh's records, and the user list composed from them (bcrypt hashes, R3).
    const records = new MeshBuilder().genesis().controller().operator("ada").node("alpha").node("beta");
    passwords = records.secrets;
    const users = composeBusUsers(records.state(), EXAMPLE_CONFIG);
    assert.ok(users.ok, "the small mesh composes a user list");
    assert.deepEqual(users.users.map((u) => u.user).sort(), [CONTROLLER, busUser("node", "alpha"), BETA, OPERATOR].sort());
    server = await startNatsServer({ files: { "users.conf": renderUserList(users) }, config: `include "users.conf"` });

    // The controller with its composed grants: the records the list came from, then commands served.
    controller = await connectToBus({ address: server.url, user: CONTROLLER, seed: passwords[CONTROLLER]! }, { name: "r33-controller" });
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
      log: { info: () => undefined, error: () => undefined },
      compose: EXAMPLE_CONFIG,
    });
    await controller.flush();

    dir = mkdtempSync(join(tmpdir(), "mesh-r33-"));
    operatorFile = join(dir, "operator.json");
    writeFileSync(operatorFile, JSON.stringify({ address: server.url, user: OPERATOR, password: passwords[OPERATOR] }), { mode: 0o600 });
  });
  after(async () => {
    for (const { nc } of sessions) if (!nc.isClosed()) await nc.close().catch(() => undefined);
    await commands?.stop();
    if (controller && !controller.isClosed()) await controller.close().catch(() => undefined);
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("R33: another node cannot subscribe to the operator's inbox or _INBOX.>, and reads nothing of the enrol reply; the operator gets it", async () => {
    // Beta tries every way to overhear the operator's replies; each on its own connection, each refused by the server.
    const eavesdrops = [inboxSubjects(OPERATOR), SHARED_INBOX_SUBJECTS, "_INBOX_*.>", ALL_SUBJECTS];
    const attempts: Array<{ subject: string; session: Session; sub: Subscription }> = [];
    for (const subject of eavesdrops) {
      const session = await dial(BETA);
      const sub = session.nc.subscribe(subject);
      await session.nc.flush().catch(() => undefined);
      await waitFor(() => session.violations.find((v) => v.operation === "subscription" && v.subject === subject), { name: `the server refuses beta sub ${subject}` });
      attempts.push({ subject, session, sub });
    }
    // Nor can beta ask for a credential itself: commands are not its to publish.
    const asker = await dial(BETA);
    asker.nc.publish(commandSubject(BETA, "node.enrol"), "{}");
    await asker.nc.flush().catch(() => undefined);
    await waitFor(() => asker.violations.find((v) => v.operation === "publish"), { name: "the server refuses beta pub mesh.command.node.enrol" });

    // The control: a connection holding the operator's own credential may listen on its inbox.
    const own = await dial(OPERATOR);
    const overheard: string[] = [];
    const ownSub = own.nc.subscribe(inboxSubjects(OPERATOR), { callback: (_error, m) => { overheard.push(m.subject); } });
    await own.nc.flush();

    // The operator enrols gamma: the reply carries gamma's credential (its key, R64: no secret).
    const operator = await dial(OPERATOR);
    const gamma = newUserKey();
    const reply = await askAs(operator.nc, OPERATOR, "node.enrol", { node: "gamma", publicKey: newNodeKeyPair().publicKey, nkey: gamma.publicKey }, 10_000);
    assert.ok(reply.ok, JSON.stringify(reply));
    const credential = (reply as unknown as { credential: { user: string; nkey: string } }).credential;
    assert.equal(credential.user, busUser("node", "gamma"));
    const record = credentialAt((await catalogue.catchUp()).credentials, principalKey("node", "gamma"))!;
    assert.ok(secretMatches(gamma.seed, record), "the reply is about gamma's own key");

    // The reply was delivered; a round trip on each connection lets anything routed to it arrive.
    await waitFor(() => overheard.length > 0, { name: "the control overhears the operator's reply" });
    for (const { session } of attempts) await session.nc.flush().catch(() => undefined);
    for (const { subject, sub, session } of attempts) {
      assert.equal(sub.getReceived(), 0, `beta read nothing on ${subject}`);
      assert.ok(!session.nc.isClosed() || sub.isClosed(), `beta's ${subject} subscription was refused, not merely idle`);
    }
    assert.deepEqual(own.violations, []);
    assert.deepEqual(operator.violations, []);
    ownSub.unsubscribe();
  });

  it("R33: beta's own grants work: its report and its own inbox (the refusals above are the composition's, not a broken login)", async () => {
    const session = await dial(BETA);
    session.nc.subscribe(inboxSubjects(BETA));
    session.nc.publish(reportSubject("beta"), "applied");
    await session.nc.flush();
    assert.deepEqual(session.violations, []);
  });

  it("R33: mesh explain, asked of the same controller, says what the server enforced (exit 1 denied, 0 allowed)", async () => {
    for (const subject of [inboxSubjects(OPERATOR), SHARED_INBOX_SUBJECTS]) {
      const denied = await mesh("explain", "node", "beta", "sub", subject);
      assert.equal(denied.code, EXIT_REFUSED, denied.out);
      assert.match(denied.out, /^denied: /m);
    }
    const allowed = await mesh("explain", "node", "beta", "pub", reportSubject("beta"));
    assert.equal(allowed.code, EXIT_OK, allowed.out);
    assert.match(allowed.out, /^allowed: /m);
    const json = await mesh("explain", "node", "beta", "sub", inboxSubjects(BETA), "--json");
    assert.equal(json.code, EXIT_OK, json.out);
    const answer = JSON.parse(json.out) as { ok: boolean; allowed: boolean; onTheBus: boolean; because: unknown[] };
    assert.ok(answer.ok && answer.allowed && answer.onTheBus && answer.because.length === 1);
  });
});
