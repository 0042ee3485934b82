/**
 * Every principal kind is an nkey user on a real nats-server 2.9.10 (issue 15, R63, R64): the list
 * composed from the records holds public keys only; each kind's seed admits it with its own grants
 * (its inbox, R33, and not another's: permissions.test.ts holds every grant of every kind); a seed
 * whose key is not on the list is refused; and after the records rotate every principal and remove
 * a node (the list recomposed and reloaded), each rotated-away key and the removed node's are
 * refused while the new ones are admitted (R48, R50). Dials the bus, not only composition.
 */
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { connect, nkeyAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import { PermissionViolationError } from "@nats-io/nats-core";
import { newUserKey } from "../../src/crypto/secrets.ts";
import { composeBusUsers, renderUserList } from "../../src/compose/index.ts";
import { CONTROLLER_NAME, busUser, inboxPrefix, inboxSubjects, type PrincipalKind } from "../../src/names.ts";
import { startNatsServer, waitFor, type NatsServer } from "../support/natsServer.ts";
import { EXAMPLE_CONFIG, MeshBuilder } from "../unit/compose/exampleMesh.ts";
import { freshControllerSuite } from "../support/controller.ts";
import { askAs } from "../support/client.ts";
import { newNodeKeyPair } from "../../src/crypto/secrets.ts";
import { BOOTSTRAP_NKEY, BOOTSTRAP_SEED } from "../../src/genesis.ts";
import { credentialOf, CONTROLLER_PRINCIPAL } from "../../src/projections/index.ts";

/** One principal of each kind, the module assigned to the node that stays. */
const KINDS: ReadonlyArray<{ kind: PrincipalKind; name: string }> = [
  { kind: "controller", name: CONTROLLER_NAME },
  { kind: "operator", name: "ada" },
  { kind: "node", name: "alpha" },
  { kind: "module", name: "web" },
  { kind: "builder", name: "ci" },
];

function mesh(): MeshBuilder {
  return new MeshBuilder().genesis().controller().operator("ada").builder("ci").node("alpha").node("beta")
    .register({ name: "web", version: "1" }).issue("web").assign("web", "alpha");
}

/** The composed list's text for the builder's state; throws when composition refuses. */
function listText(b: MeshBuilder): string {
  const list = composeBusUsers(b.state(), EXAMPLE_CONFIG);
  if (!list.ok) throw new Error(`the list is refused: ${list.refusal.code}`);
  return renderUserList(list);
}

/** Dials with `seed` as `user` (its inbox prefix); resolves the connection or rejects as the bus refused it. */
async function dial(server: NatsServer, user: string, seed: string): Promise<NatsConnection> {
  return connect({ servers: server.url, authenticator: nkeyAuthenticator(new TextEncoder().encode(seed)), inboxPrefix: inboxPrefix(user), reconnect: false, timeout: 5_000 });
}

async function refused(server: NatsServer, user: string, seed: string): Promise<boolean> {
  try {
    const nc = await dial(server, user, seed);
    await nc.close();
    return false;
  } catch (error) {
    if (/authorization/i.test(String(error instanceof Error ? error.message : error))) return true;
    throw error;
  }
}

/** Subscribes on the principal's own inbox (granted) and on another's (refused by the server, R33). */
async function ownInboxOnly(server: NatsServer, user: string, seed: string, other: string): Promise<void> {
  const nc = await dial(server, user, seed);
  const violations: PermissionViolationError[] = [];
  void (async () => {
    for await (const s of nc.status()) if (s.type === "error" && s.error instanceof PermissionViolationError) violations.push(s.error);
  })();
  try {
    nc.subscribe(inboxSubjects(user));
    await nc.flush();
    assert.deepEqual(violations.map((v) => v.message), [], `${user} may listen on its own inbox`);
    nc.subscribe(inboxSubjects(other));
    await nc.flush().catch(() => undefined);
    await waitFor(() => violations.find((v) => v.operation === "subscription"), { name: `${user} refused ${other}'s inbox` });
  } finally {
    if (!nc.isClosed()) await nc.close();
  }
}

describe("every principal kind dials with its nkey (R63, R64)", () => {
  let server: NatsServer;
  let b: MeshBuilder;
  before(async () => {
    b = mesh();
    const text = listText(b);
    assert.doesNotMatch(text, /password|\$2[aby]\$|SU[A-Z2-7]{56}/, "no hash and no seed in the list");
    server = await startNatsServer({ files: { "users.conf": text }, config: `include "users.conf"` });
  });
  after(async () => { await server?.stop(); });

  for (const { kind, name } of KINDS) {
    it(`R63: a ${kind}'s seed admits it with its own grants (its inbox, not another's); a seed whose key is not on the list is refused`, async () => {
      const user = busUser(kind, name);
      const other = busUser("operator", "ada") === user ? busUser("node", "alpha") : busUser("operator", "ada");
      await ownInboxOnly(server, user, b.secrets[user]!, other);
      assert.equal(await refused(server, user, newUserKey().seed), true, "a wrong seed under the same name is refused");
    });
  }
});

describe("rotated-away and removed keys are refused by the bus (R48, R50, R64)", () => {
  let server: NatsServer;
  let before_: Record<string, string>;
  const fresh: Record<string, string> = {};
  let b: MeshBuilder;
  before(async () => {
    b = mesh();
    server = await startNatsServer({ files: { "users.conf": listText(b) }, config: `include "users.conf"` });
    before_ = { ...b.secrets };
    // Every principal gets a new key pair (a node's made by its host, R64; the others minted), and beta is removed.
    for (const { kind, name } of KINDS) {
      const key = newUserKey();
      const user = busUser(kind, name);
      fresh[user] = key.seed;
      b.commit(kind, name, {
        type: "CredentialRotated", principal: { kind, name }, user, nkey: key.publicKey,
        ...(kind === "node" ? {} : { sealed: `sealed:${user}:2` }), address: "tls://bus.example.net:4222",
      });
    }
    b.commit("node", "beta", { type: "NodeRemoved", node: "beta" });
    const text = listText(b);
    writeFileSync(join(server.dir, "users.conf"), text);
    server.reload();
    const controller = busUser("controller", CONTROLLER_NAME);
    // While the server reloads it may drop a dial before answering it (EPIPE): that is no answer yet.
    await waitFor(async () => refused(server, controller, before_[controller]!).catch(() => false), { name: "the reloaded list refuses the controller's old key" });
  });
  after(async () => { await server?.stop(); });

  for (const { kind, name } of KINDS) {
    it(`R50: a ${kind}'s rotated-away seed is refused and its new one admitted`, async () => {
      const user = busUser(kind, name);
      assert.equal(await refused(server, user, before_[user]!), true, "the old key is gone from the list");
      assert.equal(await refused(server, user, fresh[user]!), false, "the new key admits it");
    });
  }

  it("R48: a removed node's seed is refused", async () => {
    const beta = busUser("node", "beta");
    assert.equal(await refused(server, beta, before_[beta]!), true);
  });
});

describe("the genesis bootstrap key is nobody's once the controller left it (R13, R14, R63)", () => {
  const suite = freshControllerSuite();
  let server: NatsServer | undefined;
  after(async () => { await server?.stop(); });

  it("R63: after the first push rotated the controller off the bootstrap key, enrolling a node or rotating one onto it is refused key-in-use (field nkey), and the bus the records compose for refuses the public bootstrap seed", async () => {
    const send = (verb: string, body: Record<string, unknown>) => askAs(suite.fixture.operator, "operator-test", verb, body);
    const controller = await suite.fixture.start();
    await suite.fixture.enrol("hub");
    await suite.fixture.send("module.register", { manifest: { name: "broker", version: "2.9.10", seats: { "mesh-broker": { protocol: "nats" } }, claims: ["mesh-broker"] } });
    await suite.fixture.send("module.issue", { module: "broker" });
    await suite.fixture.send("assign", { module: "broker", node: "hub" });
    await controller.push();
    const rotated = credentialOf((await controller.catalogue.catchUp()).credentials, CONTROLLER_PRINCIPAL);
    assert.ok(rotated?.nkey !== undefined && rotated.nkey !== BOOTSTRAP_NKEY, "the first push with a broker holder rotated the controller off the bootstrap key (R14)");

    const enrol = await send("node.enrol", { node: "vm3", publicKey: newNodeKeyPair().publicKey, nkey: BOOTSTRAP_NKEY });
    assert.deepEqual(enrol.ok ? "ok" : [enrol.error.code, enrol.error.field], ["key-in-use", "nkey"], "enrolling a node on the bootstrap key");
    const rotate = await send("credential.rotate", { kind: "node", name: "hub", nkey: BOOTSTRAP_NKEY });
    assert.deepEqual(rotate.ok ? "ok" : [rotate.error.code, rotate.error.field], ["key-in-use", "nkey"], "rotating a node onto the bootstrap key");

    const list = composeBusUsers(await controller.catalogue.catchUp(), EXAMPLE_CONFIG);
    assert.ok(list.ok);
    server = await startNatsServer({ files: { "users.conf": renderUserList(list) }, config: `include "users.conf"` });
    assert.equal(await refused(server, busUser("node", "vm3"), BOOTSTRAP_SEED), true, "nobody dials with the seed published in the source");
    await controller.stop();
  });
});
