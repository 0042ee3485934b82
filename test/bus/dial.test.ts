import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { startNatsServer } from "../support/natsServer.ts";
import { connectWithCredentialFile } from "../../src/client/dial.ts";
import { BusConnectError } from "../../src/bus/connect.ts";

describe("a verb's dial while the bus reloads its users", () => {
  it("every dial with a valid key is admitted though a reload closes the connections still in their handshake (nats-server 2.9.10's reloadAuthorization)", async () => {
    const users = Array.from({ length: 200 }, (_, i) => `{ user: "u${i}", password: "p${i}" }`).join(",\n");
    const server = await startNatsServer({ config: `authorization { users: [\n${users}\n] }` });
    const reloads = setInterval(() => server.reload(), 200);
    const refused: string[] = [];
    let admitted = 0;
    try {
      const credential = { address: `nats://127.0.0.1:${server.port}`, user: "u7", password: "p7" };
      const deadline = Date.now() + 3_000;
      // Eight dials at a time for three seconds: about one in a hundred met a reload without a retry.
      await Promise.all(Array.from({ length: 8 }, async () => {
        while (Date.now() < deadline) {
          try {
            await (await connectWithCredentialFile("/nonexistent/operator.json", { reconnect: false }, () => credential)).close();
            admitted += 1;
          } catch (error) {
            refused.push(String(error));
          }
        }
      }));
    } finally {
      clearInterval(reloads);
      await server.stop();
    }
    assert.ok(admitted > 100, `dials admitted: ${admitted}`);
    assert.deepEqual(refused.slice(0, 3), [], `${refused.length} of ${admitted + refused.length} dials refused`);
  });

  it("a key the bus does not hold is still refused, as unauthorized", async () => {
    const server = await startNatsServer({ config: `authorization { users: [ { user: "u1", password: "p1" } ] }` });
    try {
      const credential = { address: `nats://127.0.0.1:${server.port}`, user: "u1", password: "wrong" };
      await assert.rejects(
        connectWithCredentialFile("/nonexistent/operator.json", { reconnect: false }, () => credential),
        (error: unknown) => error instanceof BusConnectError && error.kind === "unauthorized",
      );
    } finally {
      await server.stop();
    }
  });
});
