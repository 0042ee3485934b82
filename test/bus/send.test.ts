import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { CommandTransportError, sendCommand } from "../../src/client/send.ts";
import { commandSubject } from "../../src/names.ts";
import { startNatsServer, type NatsServer } from "../support/natsServer.ts";

/**
 * R77: a failover is a pause, not an error. A request answered "no responders" reached nobody, so
 * the client sends it again for a short bounded time: a controller that starts serving meanwhile
 * (a standby taking over, or its interest still crossing the cluster's routes) answers it.
 */
describe("sendCommand while nothing serves the verb", () => {
  const ASKER = "operator-send";
  let server: NatsServer;
  let client: NatsConnection;
  let controller: NatsConnection;

  before(async () => {
    server = await startNatsServer();
    client = await connect({ servers: server.url });
    controller = await connect({ servers: server.url });
  });
  after(async () => {
    await client?.close();
    await controller?.close();
    await server?.stop();
  });

  it("R77: a command answered 'no responders' is sent again and served by a controller that starts serving 300 ms later", async () => {
    const subject = commandSubject(ASKER, "status");
    let received = 0;
    const late = setTimeout(() => {
      controller.subscribe(subject, { callback: (_e, m) => { received += 1; m.respond(JSON.stringify({ ok: true })); } });
    }, 300);
    try {
      const reply = await sendCommand(client, ASKER, "status", {}, { timeoutMs: 5_000 });
      assert.equal(reply.ok, true);
      assert.equal(received, 1, "sent again only while nobody received it");
    } finally {
      clearTimeout(late);
    }
  });

  it("R77: with nothing serving, sendCommand gives up with no-controller once its bounded retries are spent", async () => {
    const started = Date.now();
    await assert.rejects(
      sendCommand(client, ASKER, "node.list", {}, { timeoutMs: 5_000, noRespondersDelaysMs: [20, 40, 80] }),
      (error: unknown) => error instanceof CommandTransportError && error.code === "no-controller",
    );
    assert.ok(Date.now() - started < 5_000, "bounded by its pauses, not the reply timeout");
  });
});
