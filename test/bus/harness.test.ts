import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { connect } from "@nats-io/transport-node";
import { startNatsServer, type NatsServer } from "../support/natsServer.ts";

describe("test harness", () => {
  let server: NatsServer;
  before(async () => { server = await startNatsServer(); });
  after(async () => { await server?.stop(); });

  it("starts a real nats-server with JetStream on a port the server chose", async () => {
    const nc = await connect({ servers: server.url });
    try {
      const info = nc.info;
      assert.equal(info?.port, server.port);
      assert.equal(info?.jetstream, true);
    } finally {
      await nc.close();
    }
  });
});
