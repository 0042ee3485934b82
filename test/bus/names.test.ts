/**
 * R52 on a real nats-server: the issue's two modules (`pay-ledger` following audit/entry, `pay`
 * following ledger-audit/entry) get two consumers, each pulls only its own events, and neither may
 * pull the other's. One server for the file, started in before() with the composed user list; the
 * composed topology is raised by raiseTopology.
 */
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { connect, nkeyAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { composeBusUsers, composeTopology, renderUserList } from "../../src/compose/index.ts";
import { raiseTopology } from "../../src/controller/raise.ts";
import { CONTROLLER_NAME, EVENTS_STREAM, busUser, eventSubject, followConsumer, inboxPrefix } from "../../src/names.ts";
import { startNatsServer, type NatsServer } from "../support/natsServer.ts";
import { EXAMPLE_CONFIG, MeshBuilder } from "../unit/compose/exampleMesh.ts";

const seat = (emits: string[]) => ({ protocol: "", emits });
const AUDIT = { name: "audit", version: "1", seats: { audit: seat(["entry"]), "ledger-audit": seat(["entry"]) }, claims: ["audit", "ledger-audit"] };
const PAY_LEDGER = { name: "pay-ledger", version: "1", follows: [{ seat: "audit", event: "entry" }] };
const PAY = { name: "pay", version: "1", follows: [{ seat: "ledger-audit", event: "entry" }] };

describe("R52: composed names on the bus", () => {
  let server: NatsServer;
  let passwords: Record<string, string>;
  const open: NatsConnection[] = [];
  const dial = async (user: string) => {
    const nc = await connect({ servers: server.url, authenticator: nkeyAuthenticator(new TextEncoder().encode(passwords[user]!)), inboxPrefix: inboxPrefix(user), reconnect: false });
    open.push(nc);
    return nc;
  };

  before(async () => {
    const b = new MeshBuilder().genesis().controller().node("alpha")
      .register(AUDIT).register(PAY_LEDGER).register(PAY).issue("audit").issue("pay-ledger").issue("pay");
    passwords = b.secrets;
    const state = b.state();
    const list = composeBusUsers(state, EXAMPLE_CONFIG);
    assert.ok(list.ok);
    server = await startNatsServer({ files: { "users.conf": renderUserList(list) }, config: `include "users.conf"` });
    const controller = await dial(busUser("controller", CONTROLLER_NAME));
    const report = await raiseTopology(await jetstreamManager(controller), composeTopology(state, EXAMPLE_CONFIG));
    assert.deepEqual(report.refused, []);
  });
  after(async () => {
    for (const nc of open) if (!nc.isClosed()) await nc.close().catch(() => undefined);
    await server?.stop();
  });

  it("R52: pay-ledger and pay get two consumers; each pulls only its own events; the other's is refused", async () => {
    const audit = await dial(busUser("module", "audit"));
    await jetstream(audit).publish(eventSubject("audit", "entry"), "for pay-ledger");
    await jetstream(audit).publish(eventSubject("ledger-audit", "entry"), "for pay");
    const pull = async (module: string, owner: string): Promise<string[]> => {
      const nc = await dial(busUser("module", module));
      const consumer = await jetstream(nc).consumers.get(EVENTS_STREAM, followConsumer(owner, owner === "pay" ? "ledger-audit" : "audit", "entry"));
      const got: string[] = [];
      for await (const m of await consumer.fetch({ max_messages: 5, expires: 1_000 })) { got.push(m.string()); await m.ackAck(); }
      return got;
    };
    assert.notEqual(followConsumer("pay-ledger", "audit", "entry"), followConsumer("pay", "ledger-audit", "entry"));
    assert.deepEqual(await pull("pay-ledger", "pay-ledger"), ["for pay-ledger"]);
    assert.deepEqual(await pull("pay", "pay"), ["for pay"]);
    // each is refused the other's consumer by the bus itself
    await assert.rejects(pull("pay", "pay-ledger"));
    await assert.rejects(pull("pay-ledger", "pay"));
  });
});
