import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { HOST_DIR } from "../../src/up/up.ts";
import { connectToBus, secretOf, type BusCredential } from "../../src/bus/connect.ts";
import { readBusCredential } from "../../src/files/index.ts";
import { eventSubject } from "../../src/names.ts";
import { waitFor } from "../support/natsServer.ts";
import { admitted, localMesh, LOCAL_NODE as NODE } from "../support/localMesh.ts";

/**
 * R73 on a whole mesh (`mesh up` in a temporary folder: the bus a child process, the controller and
 * the local node's host agent in this process): a module's rotation never cuts off a client still
 * connected with its old seed; the push after its node reports the new env applied drops the old key.
 */

const MODULE = "beacon";
const beacon = { name: MODULE, version: "1.0.0", seats: { beacon: { protocol: "beacon", emits: ["blink"] } }, claims: ["beacon"] };

/** A client that stays connected as a running module would, counting what its status says. */
type Watched = { nc: NatsConnection; authorizationErrors: string[]; disconnects: number };

async function runningModule(credential: BusCredential): Promise<Watched> {
  const nc = await connectToBus(credential, { reconnect: true, reconnectWaitMs: 100 });
  const watched: Watched = { nc, authorizationErrors: [], disconnects: 0 };
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === "disconnect") watched.disconnects += 1;
      const { error, data } = status as { error?: unknown; data?: unknown };
      const text = error instanceof Error ? error.message : typeof data === "string" ? data : "";
      if (/authorization/i.test(text)) watched.authorizationErrors.push(text);
    }
  })();
  return watched;
}

/** The module emits one event and the bus answers a flush: it is on the bus with its grants. */
async function emits(nc: NatsConnection): Promise<void> {
  nc.publish(eventSubject(MODULE, "blink"), "blink");
  await nc.flush();
}

describe("R73: rotation without a gap", () => {
  const local = localMesh({ prefix: "mesh-rotation-" });
  const { ask, pushWait } = local;

  it("R73: a client on the module's old seed keeps working across rotate + push (0 authorization violations), the new seed works, and the push after the node reported drops the old key", { timeout: 120_000 }, async () => {
    await ask("module.register", { manifest: beacon });
    await ask("module.issue", { module: MODULE });
    await ask("assign", { module: MODULE, node: NODE });
    await pushWait();
    const file = join(local.dir, HOST_DIR, "modules", MODULE, "credential.json");
    const old = readBusCredential(file);
    const running = await runningModule(old);
    try {
      await emits(running.nc);

      await ask("credential.rotate", { kind: "module", name: MODULE });
      assert.deepEqual(await pushWait(), [{ principal: { kind: "module", name: MODULE }, until: [NODE] }], "the push says the old key stays until alpha reports");
      await waitFor(() => secretOf(readBusCredential(file)) !== secretOf(old), { timeoutMs: 10_000, name: "the module's new credential on disk" });
      // Dialed at the genesis address: the rotation points the credential at the broker's overlay name (R7), which resolves nowhere here.
      const fresh = { ...readBusCredential(file), address: old.address };
      assert.equal(await admitted(fresh), true, "the new seed is admitted after the push (the bus reloaded its list)");
      assert.deepEqual(running.authorizationErrors, [], "the running module saw no authorization violation");
      assert.equal(running.disconnects, 0, "nor was it disconnected");
      await emits(running.nc);
      assert.equal(running.nc.isClosed(), false);
      assert.equal(await admitted(fresh), true, "the new seed is admitted after the push");
      assert.equal(await admitted(old), true, "R73: a reconnect with the old seed is still admitted: the node has not been pushed since it reported");

      // The node reported the new env applied (push --wait saw it): the next push drops the old key.
      assert.equal(await pushWait(), undefined, "no overlap is left open");
      assert.equal(await admitted(old), false, "the old seed is refused once the node reported the new one and a push followed");
      assert.equal(await admitted(fresh), true, "the new seed still is admitted");
    } finally {
      await running.nc.close().catch(() => undefined);
    }
  });
});
