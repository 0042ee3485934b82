/**
 * A controller's stop ends when the bus is gone (a server stopped before it, as a test's hooks or a
 * host's shutdown order may do): every wait of the stop is bounded, none waits for a reconnect.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { startNatsServer } from "../support/natsServer.ts";
import { controllerFixture } from "../support/controller.ts";
import { parseControllerConfig } from "../../src/config.ts";
import { startController } from "../../src/bootstrap/main.ts";
import { memoryLog } from "../../src/bootstrap/log.ts";

describe("controller stop", () => {
  it("R61: a controller's stop ends and closes its connection when the bus went away first", async () => {
    const server = await startNatsServer();
    const fixture = await controllerFixture(server);
    const controller = await startController(parseControllerConfig(fixture.env), { log: memoryLog() });
    await fixture.close();
    await server.stop();
    const outcome = await Promise.race([
      controller.stop().then(() => "stopped"),
      new Promise<string>((resolve) => setTimeout(() => resolve("still stopping after 30 s"), 30_000).unref()),
    ]);
    assert.equal(outcome, "stopped");
    assert.ok(controller.nc.isClosed(), "its connection is closed, not left reconnecting (it would keep the process alive)");
  });
});
