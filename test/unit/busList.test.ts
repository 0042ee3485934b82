import { describe, it, before } from "node:test";
import assert from "node:assert/strict";
import { configLoadTime, UserListRefused } from "../../src/host/index.ts";
import { freePort } from "../../installer/serverConfig.ts";

/**
 * Found by a new-user trial: a stopped server's miss in a push report read "fetch failed", the
 * monitoring endpoint probe's raw error. No nats-server: a port nobody listens on is a stopped one.
 */
describe("the bus's monitoring endpoint, when it does not answer", () => {
  let stopped: string;
  before(async () => { stopped = `http://127.0.0.1:${await freePort()}`; });

  it("R60: says the server's monitoring endpoint did not answer and it looks stopped, naming the server", async () => {
    await assert.rejects(configLoadTime(stopped, "mesh-bus-2"), (error: unknown) => {
      assert.ok(error instanceof UserListRefused);
      assert.equal(error.code, "no-monitor");
      assert.match(error.message, /mesh-bus-2/);
      assert.match(error.message, /did not answer/);
      assert.match(error.message, /looks stopped/);
      assert.ok(error.message.includes(`${stopped}/varz`), "names the endpoint");
      assert.doesNotMatch(error.message, /fetch failed/);
      return true;
    });
  });

  it("one server, unnamed: says the bus looks stopped", async () => {
    await assert.rejects(configLoadTime(stopped), (error: unknown) => error instanceof UserListRefused && /the bus looks stopped/.test(error.message));
  });
});
