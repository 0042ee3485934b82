/**
 * nkey principals on a real nats-server 2.9.10 (issue 15, R63): a credential that holds an nkey
 * seed dials with a signed nonce (connectToBus), the seed re-read at every (re)connect; a wrong
 * seed is refused; and a list mixing a password user and nkey users (the transition from a mesh
 * of passwords) admits both.
 */
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { PermissionViolationError } from "@nats-io/nats-core";
import { createUser } from "@nats-io/nkeys";
import { connectToBus, BusConnectError, type BusCredential } from "../../src/bus/connect.ts";
import { startNatsServer, waitFor, type NatsServer } from "../support/natsServer.ts";

function keyPair(): { seed: string; publicKey: string } {
  const user = createUser();
  return { seed: new TextDecoder().decode(user.getSeed()), publicKey: user.getPublicKey() };
}

describe("nkey credentials dial the bus (R63)", () => {
  let server: NatsServer;
  const ann = keyPair();
  const bob = keyPair();
  const stranger = keyPair();
  before(async () => {
    server = await startNatsServer({
      config: [
        "authorization { users = [",
        `  {nkey: "${ann.publicKey}", permissions: {publish: {allow: ["mesh.ann.>"]}, subscribe: {allow: ["_INBOX_ann.>"]}}}`,
        `  {nkey: "${bob.publicKey}", permissions: {publish: {allow: ["mesh.bob.>"]}, subscribe: {allow: ["_INBOX_bob.>"]}}}`,
        `  {user: "old-timer", password: "the-old-secret", permissions: {publish: {allow: ["mesh.old.>"]}, subscribe: {allow: ["_INBOX_old-timer.>"]}}}`,
        "] }",
      ].join("\n"),
    });
  });
  after(async () => { await server?.stop(); });

  const credential = (user: string, secret: { seed: string } | { password: string }): BusCredential => ({ address: server.url, user, ...secret });

  it("R63: an nkey seed admits its principal with exactly its grants", async () => {
    const nc = await connectToBus(credential("ann", { seed: ann.seed }), { reconnect: false });
    const violations: PermissionViolationError[] = [];
    void (async () => {
      for await (const s of nc.status()) if (s.type === "error" && s.error instanceof PermissionViolationError) violations.push(s.error);
    })();
    try {
      nc.publish("mesh.ann.hello", "x");
      await nc.flush();
      assert.equal(violations.length, 0, "its own subject is granted");
      nc.publish("mesh.bob.hello", "x");
      await nc.flush().catch(() => undefined);
      await waitFor(() => violations.find((v) => v.operation === "publish" && v.subject === "mesh.bob.hello"), { name: "another's subject refused" });
    } finally {
      await nc.close();
    }
  });

  it("R63: a seed whose public key is not on the list is refused", async () => {
    await assert.rejects(connectToBus(credential("ann", { seed: stranger.seed }), { reconnect: false }), (error: unknown) => {
      assert.ok(error instanceof BusConnectError);
      assert.match(error.message, /Authorization/);
      assert.ok(!error.message.includes(stranger.seed), "the seed is in no message (R3)");
      return true;
    });
  });

  it("R63: the seed is read at every connect: a secret function switches keys without a new connection object", async () => {
    let current = stranger.seed;
    await assert.rejects(connectToBus(credential("bob", { seed: bob.seed }), { reconnect: false, secret: () => current, maxReconnectAttempts: 0, timeoutMs: 2_000 }));
    current = bob.seed;
    const nc = await connectToBus(credential("bob", { seed: stranger.seed }), { reconnect: false, secret: () => current });
    await nc.close();
  });

  it("R63: a list mixing a password user and nkey users admits both (the transition)", async () => {
    const old = await connectToBus(credential("old-timer", { password: "the-old-secret" }), { reconnect: false });
    const nkey = await connectToBus(credential("bob", { seed: bob.seed }), { reconnect: false });
    await old.close();
    await nkey.close();
  });
});
