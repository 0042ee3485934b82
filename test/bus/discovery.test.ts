/**
 * Discovery (issue 30): the controller answers the NATS services protocol, so standard NATS
 * tooling lists it and its endpoints' statistics; operators may ask, a node or a module may not.
 */
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { connect, nkeyAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import { PermissionViolationError } from "@nats-io/nats-core";
import { freshControllerSuite } from "../support/controller.ts";
import { startNatsServer, waitFor, type NatsServer } from "../support/natsServer.ts";
import { hostileUserList } from "../support/hostileMesh.ts";
import { watchViolations } from "../support/violations.ts";
import { memoryLog } from "../../src/bootstrap/log.ts";
import { startDiscovery } from "../../src/bootstrap/discovery.ts";
import { VERBS } from "../../src/contracts/verbs.ts";
import { INFO_RESPONSE_TYPE, PING_RESPONSE_TYPE, STATS_RESPONSE_TYPE, type InfoResponse, type PingResponse, type StatsResponse } from "../../src/discovery/micro.ts";
import { CONTROLLER_NAME, busUser, inboxPrefix, microSubject } from "../../src/names.ts";

async function ask<T>(nc: NatsConnection, subject: string): Promise<T> {
  return (await nc.request(subject, "", { timeout: 2_000 })).json<T>();
}

describe("discovery: the running controller answers the NATS services protocol", () => {
  const suite = freshControllerSuite();

  it("issue 30: $SRV.PING, $SRV.INFO and $SRV.STATS name the controller, its verbs as endpoints and their statistics", async () => {
    await suite.fixture.start();
    await suite.fixture.send("nodes", {});
    const operator = suite.fixture.operator;
    const ping = await ask<PingResponse>(operator, microSubject("PING"));
    assert.equal(ping.type, PING_RESPONSE_TYPE);
    assert.equal(ping.name, CONTROLLER_NAME);
    assert.match(ping.version, /^\d+\.\d+\.\d+/);
    // The same instance by name and by name and id.
    assert.equal((await ask<PingResponse>(operator, microSubject("PING", CONTROLLER_NAME))).id, ping.id);
    assert.equal((await ask<PingResponse>(operator, microSubject("PING", CONTROLLER_NAME, ping.id))).id, ping.id);

    const info = await ask<InfoResponse>(operator, microSubject("INFO", CONTROLLER_NAME, ping.id));
    assert.equal(info.type, INFO_RESPONSE_TYPE);
    assert.deepEqual(info.endpoints.map((e) => e.metadata.verb).sort(), Object.keys(VERBS).sort());

    const stats = await ask<StatsResponse>(operator, microSubject("STATS"));
    assert.equal(stats.type, STATS_RESPONSE_TYPE);
    assert.ok(!Number.isNaN(Date.parse(stats.started)));
    const nodes = stats.endpoints.find((e) => e.name === "nodes")!;
    assert.equal(nodes.num_requests, 1);
    assert.equal(nodes.num_errors, 0);
    assert.ok(nodes.processing_time > 0);
  });
});

describe("discovery: only operators may ask (composed permissions on a real nats-server)", () => {
  let server: NatsServer;
  let secrets: Record<string, string>;
  let controller: NatsConnection;
  let discovery: ReturnType<typeof startDiscovery>;
  const open: NatsConnection[] = [];
  const dial = async (user: string) => {
    const nc = await connect({ servers: server.url, authenticator: nkeyAuthenticator(new TextEncoder().encode(secrets[user]!)), inboxPrefix: inboxPrefix(user), reconnect: false });
    open.push(nc);
    return { nc, violations: watchViolations(nc) };
  };

  before(async () => {
    const list = hostileUserList();
    secrets = list.secrets;
    server = await startNatsServer({ files: { "users.conf": list.text }, config: `include "users.conf"` });
    const dialled = await dial(busUser("controller", CONTROLLER_NAME));
    controller = dialled.nc;
    discovery = startDiscovery(controller, memoryLog());
    await controller.flush();
    assert.deepEqual(dialled.violations, [], "the controller's grants cover its $SRV subscriptions");
  });
  after(async () => {
    await discovery?.stop();
    for (const nc of open) if (!nc.isClosed()) await nc.close().catch(() => undefined);
    await server?.stop();
  });

  it("issue 30: an operator's $SRV.PING and $SRV.INFO reach the controller and its answer reaches the operator", async () => {
    const { nc, violations } = await dial(busUser("operator", "ada"));
    const ping = await ask<PingResponse>(nc, microSubject("PING"));
    assert.equal(ping.name, CONTROLLER_NAME);
    const info = await ask<InfoResponse>(nc, microSubject("INFO", CONTROLLER_NAME));
    assert.equal(info.endpoints.length, Object.keys(VERBS).length);
    assert.deepEqual(violations, []);
  });

  for (const user of [busUser("node", "beta"), busUser("module", "build-machine")]) {
    it(`issue 30: ${user} asking $SRV.PING is refused by the bus and gets no answer`, async () => {
      const { nc, violations } = await dial(user);
      await assert.rejects(nc.request(microSubject("PING"), "", { timeout: 1_000 }));
      await waitFor(() => violations.find((v) => v instanceof PermissionViolationError && v.operation === "publish" && v.subject === microSubject("PING")), { name: `${user}'s publish refused` });
    });
  }
});
