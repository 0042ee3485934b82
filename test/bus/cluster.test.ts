import { enrolRequest } from "../support/enrol.ts";
import { describe, it, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import type { NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { startNatsCluster, type NatsCluster } from "../support/natsCluster.ts";
import { waitFor } from "../support/natsServer.ts";
import { connectToBus, type BusCredential } from "../../src/bus/connect.ts";
import { openCatalogue, type Catalogue } from "../../src/records/catalogue.ts";
import { serveCommands, type CommandServer } from "../../src/serve/server.ts";
import { newMeshKey, newNodeKeyPair, newUserKey, openWithMeshKey, sealWithMeshKey } from "../../src/crypto/secrets.ts";
import { CommandTransportError } from "../../src/client/send.ts";
import { askAs } from "../support/client.ts";
import type { Reply } from "../../src/commands/envelope.ts";
import { CATALOGUE_STREAM, CONTROLLER_NAME, busUser } from "../../src/names.ts";
import { TEST_FINGERPRINT } from "../support/commandMesh.ts";
import { controllerFixture, type ControllerFixture } from "../support/controller.ts";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  CLUSTER_NAME, SERVER_CONFIG_FILE, clusterServerConfigs, clusterServerDir, findNatsServer, freePort, renderServerConfig, testServerConfig,
} from "../../installer/serverConfig.ts";
import { makeBusCertificate } from "../../installer/tls.ts";
import { startBus, type BusProcess } from "../../installer/bus.ts";

/**
 * The mesh on a three-server JetStream cluster (issue 14): clients dial every server and reconnect
 * to a survivor (R62); killing the records' stream leader during a burst of commands loses no
 * acknowledged command and doubles none (R62). Measured times are printed, never asserted.
 */

const OPERATOR = "operator-ann";
type Ok = Extract<Reply, { ok: true }>;

/** A credential naming every server of the cluster (no authorization on the test servers). */
function clusterCredential(cluster: NatsCluster, user: string): BusCredential {
  return { address: cluster.urls[0]!, addresses: cluster.urls, user, password: "unused" };
}

/**
 * `promise`, or a rejection naming `what` once `ms` passed: a wait on the cluster that hangs fails
 * the test saying where, instead of holding the run until the runner's own timeout.
 */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms); });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** Milliseconds one clean-up step may take before the test fails naming it. */
const CLEANUP_STEP_MS = 30_000;

/**
 * Clean-ups run last registered first, in one `after` of the test (a connection closes before the
 * cluster under it stops; node:test runs a test's after hooks in the order they were added). A
 * step that fails is passed over; one that hangs is passed over after CLEANUP_STEP_MS and fails the
 * test, naming it, once the others ran.
 */
function cleanups(t: TestContext): (step: () => unknown) => void {
  const steps: Array<() => unknown> = [];
  t.after(async () => {
    const hung: string[] = [];
    for (const step of steps.reverse()) {
      await within(Promise.resolve(step()).catch(() => undefined), CLEANUP_STEP_MS, `clean-up ${String(step)}`).catch((error: Error) => { hung.push(error.message); });
    }
    if (hung.length > 0) throw new Error(hung.join("; "));
  });
  return (step) => { steps.push(step); };
}

/** The server name the connection is on now. */
function serverOf(nc: NatsConnection): string {
  return (nc as unknown as { info?: { server_name?: string } }).info?.server_name ?? "";
}

describe("a mesh on a three-server cluster", () => {
  // Every test starts its own cluster: each kills a server or a controller in it.

  it("R62: a credential listing every server dials one that is up when the first named is down, and moves to a survivor when its server dies", async (t) => {
    const defer = cleanups(t);
    // Its own cluster: this test kills two of its servers.
    const own = await startNatsCluster(3);
    defer(() => own.stop());
    await own.servers[0]!.kill();
    const nc = await connectToBus(clusterCredential(own, OPERATOR), { name: "test-r62", reconnectWaitMs: 100 });
    defer(() => nc.close());
    const first = serverOf(nc);
    assert.notEqual(first, "s1", "the dead server is not the one dialled");
    await own.byName(first).kill();
    const moved = await waitFor(() => { const now = serverOf(nc); return now !== first && now !== "" ? now : undefined; },
      { timeoutMs: 15_000, name: "the reconnect to the surviving server" });
    const survivor = own.servers.map((_, i) => `s${i + 1}`).find((n) => n !== "s1" && n !== first);
    assert.equal(moved, survivor);
    await nc.flush();
    assert.equal(nc.isClosed(), false);
  });

  it("R62: killing the records' stream leader during a burst of commands loses no acknowledged command and doubles none", async (t) => {
    const defer = cleanups(t);
    const cluster = await startNatsCluster(3);
    defer(() => cluster.stop());
    const meshKey = newMeshKey();
    const errors: string[] = [];
    const controllerUser = busUser("controller", CONTROLLER_NAME);
    const nc = await connectToBus(clusterCredential(cluster, controllerUser), { name: "test-controller", reconnectWaitMs: 100 });
    defer(() => nc.close());
    const catalogue: Catalogue = await openCatalogue(nc, { replicas: 3 });
    const created = await catalogue.transact("genesis", () => ({
      ok: true,
      entity: { kind: "mesh", id: "mesh" },
      events: [{
        type: "MeshCreated", actor: "installer", commandId: "genesis", at: new Date().toISOString(),
        genesisAddress: cluster.urls[0]!.replace("nats://", "tls://"), fingerprint: TEST_FINGERPRINT, bootstrapUser: controllerUser,
      }],
    }));
    assert.equal(created.ok, true);
    const commands: CommandServer = serveCommands(nc, catalogue, {
      sealSecret: (password) => sealWithMeshKey(meshKey, password),
      openSecret: (sealed) => openWithMeshKey(meshKey, sealed),
      now: () => new Date(),
      newId: () => randomUUID(),
      log: { info: () => undefined, error: (line) => { errors.push(line); } },
    });
    defer(() => commands.stop());
    const client = await connectToBus(clusterCredential(cluster, OPERATOR), { name: "test-operator", reconnectWaitMs: 100 });
    defer(() => client.close());
    const jsm = await jetstreamManager(client);
    const stream = await jsm.streams.info(CATALOGUE_STREAM);
    assert.equal(stream.config.num_replicas, 3);
    const leader = stream.cluster?.leader;
    assert.ok(leader, "the records' stream has a leader");

    // The burst: enrolments with their own command ids, a few at a time; a send that gets no reply
    // is sent again with the same id (what an operator's CLI does), until it is acknowledged.
    const TOTAL = 60;
    const KILL_AFTER = 15;
    const acknowledged = new Map<string, number>();
    let killedAt = 0;
    let firstAfterKill = 0;
    let killing: Promise<void> | undefined;
    const enrol = async (i: number): Promise<void> => {
      const node = `burst-${i}`;
      const body = { commandId: `enrol-${node}`, node, publicKey: newNodeKeyPair().publicKey, nkey: newUserKey().publicKey };
      // Bounded by time, not tries: while the controller's own connection moves to a survivor a
      // send fails at once (no responders), so it is paced.
      const giveUpAt = Date.now() + 60_000;
      for (let attempt = 0; Date.now() < giveUpAt; attempt += 1) {
        if (attempt > 0) await new Promise((r) => setTimeout(r, 100));
        const sentAt = Date.now();
        let reply: Reply;
        try {
          reply = await askAs(client, OPERATOR, "node.enrol", body, 3_000);
        } catch (error) {
          if (error instanceof CommandTransportError) continue;
          throw error;
        }
        if (!reply.ok) {
          // A refusal for a busy bus (the append could not be made) is retried like a lost reply.
          if (reply.error.code === "bus-unavailable") continue;
          assert.fail(`${node} refused: ${reply.error.code}`);
        }
        acknowledged.set(node, (reply as Ok & { sequence: number }).sequence);
        // Failover: from the kill to the first acknowledgement of a command sent after it.
        if (killedAt && sentAt >= killedAt && !firstAfterKill) firstAfterKill = Date.now();
        if (acknowledged.size === KILL_AFTER && !killing) {
          killedAt = Date.now();
          killing = cluster.byName(leader).kill();
        }
        return;
      }
      assert.fail(`${node} was never acknowledged`);
    };
    let next = 0;
    const worker = async () => { while (next < TOTAL) await enrol(next++); };
    await Promise.all([worker(), worker(), worker(), worker()]);
    await killing;
    assert.ok(killedAt > 0, "the leader's server was killed during the burst");
    t.diagnostic(`leader ${leader} killed; first command acknowledged ${firstAfterKill - killedAt} ms later`);

    // The killed server comes back and catches up (its store is kept), so the checks below read a
    // whole cluster again.
    await cluster.restart(leader);
    await waitFor(async () => {
      const replicas = (await jsm.streams.info(CATALOGUE_STREAM).catch(() => undefined))?.cluster?.replicas ?? [];
      return replicas.length === 2 && replicas.every((r) => r.current && !r.offline);
    }, { timeoutMs: 30_000, intervalMs: 200, name: "the restarted server's catch-up" });

    // Nothing lost, nothing doubled: the history of every acknowledged node holds exactly one
    // enrolment, at the sequence its acknowledgement named, and the records hold no other.
    assert.equal(acknowledged.size, TOTAL);
    for (const [node, sequence] of acknowledged) {
      const reply = await askAs(client, OPERATOR, "history", { kind: "node", id: node }, 10_000);
      assert.equal(reply.ok, true, `${JSON.stringify(reply)}\n${errors.slice(-3).join("\n")}`);
      const history = reply as Ok & { events: Array<{ type: string; sequence: number }> };
      const enrolments = history.events.filter((e) => e.type === "NodeEnrolled");
      assert.equal(enrolments.length, 1, `${node}: ${JSON.stringify(history.events)}`);
      assert.equal(enrolments[0]!.sequence, sequence, node);
    }
    const after = await jsm.streams.info(CATALOGUE_STREAM);
    assert.equal(after.state.messages, TOTAL + 1, "genesis and one commit per acknowledged command");
  });

  it("R61: two controllers, one active: the standby serves nothing while the lease is held, and serves once the active one dies and its lease lapses", async (t) => {
    const defer = cleanups(t);
    const LEASE_MS = 3_000;
    const cluster = await startNatsCluster(3);
    defer(() => cluster.stop());
    const fixture: ControllerFixture = await controllerFixture({ url: cluster.urls[0]! }, { addresses: cluster.urls, replicas: 3 });
    defer(() => fixture.close());
    const env = { ...fixture.env, MESH_CONTROLLER_LEASE_MS: String(LEASE_MS) };
    const active = await fixture.start(env);
    assert.ok(active.lines.some((l) => /holding the controllers' lease/.test(l)), active.lines.join("\n"));

    // The standby: its start waits for the lease and serves nothing meanwhile.
    let standbyStarted = false;
    const standbyStart = fixture.start(env).then((c) => { standbyStarted = true; return c; });
    defer(async () => { await (await standbyStart.catch(() => undefined))?.stop(); });
    const before = await fixture.send("node.enrol", enrolRequest("lease-a"));
    assert.equal(before.ok, true);
    await new Promise((r) => setTimeout(r, LEASE_MS)); // a whole lease: renewed, not lapsed
    assert.equal(standbyStarted, false, "the standby serves nothing while the active controller renews its lease");
    assert.ok(active.catalogue.state.sequence >= (before as Ok & { sequence: number }).sequence, "the active controller served it");

    // The active controller dies without a goodbye (its connection is gone, its lease not released).
    const diedAt = Date.now();
    await active.nc.close();
    // The lease lapses within LEASE_MS; a start then serves within its own bound (R61) or throws.
    const standby = await within(standbyStart, 90_000, "the standby's takeover");
    const tookOver = Date.now();
    const after = await fixture.send("node.enrol", enrolRequest("lease-b"));
    const served = Date.now();
    assert.equal(after.ok, true);
    assert.ok(standby.lines.some((l) => /holding the controllers' lease/.test(l)), standby.lines.join("\n"));
    assert.ok(standby.catalogue.state.sequence >= (after as Ok & { sequence: number }).sequence, "the standby served it");
    t.diagnostic(`lease ${LEASE_MS} ms: the standby took over ${tookOver - diedAt} ms after the active controller died; first command acknowledged at ${served - diedAt} ms`);
  });
});

describe("the installer's configuration of a three-server bus", () => {
  it("R34, R62: three servers from clusterServerConfigs form one cluster over TLS routes with the mesh certificate, present it on every client port, and place three replicas", async (t) => {
    const defer = cleanups(t);
    const root = mkdtempSync(join(tmpdir(), "mesh-cluster-conf-"));
    defer(() => rmSync(root, { recursive: true, force: true }));
    const tls = await makeBusCertificate(root, []);
    const ports = async () => [await freePort(), await freePort(), await freePort()];
    const configs = clusterServerConfigs({
      size: 3, root, listenHost: "127.0.0.1", clientPorts: await ports(), routePorts: await ports(), monitorPorts: [0, 0, 0],
      certFile: tls.certFile, keyFile: tls.keyFile,
    });
    const binary = findNatsServer();
    const buses: BusProcess[] = [];
    defer(async () => { for (const bus of buses) await bus.stop(); });
    mkdirSync(join(root, "logs")); // each server's own log (R70)
    for (const [i, config] of configs.entries()) {
      const dir = join(root, clusterServerDir(i));
      mkdirSync(join(dir, "store"), { recursive: true });
      // Each server includes its own copy of the one list (R60).
      writeFileSync(join(dir, config.userListFile), `authorization { users: [ { user: "${OPERATOR}", password: "cluster-test" } ] }\n`);
      const configFile = join(dir, SERVER_CONFIG_FILE);
      writeFileSync(configFile, renderServerConfig(config));
      testServerConfig(binary, configFile);
      buses.push(await startBus({ binary, configFile, logFile: config.logFile, host: "127.0.0.1", port: config.port, fingerprint: tls.fingerprint, detached: false }));
    }
    const addresses = configs.map((c) => `tls://127.0.0.1:${c.port}`);
    const nc = await connectToBus({ address: addresses[0]!, addresses, user: OPERATOR, password: "cluster-test", fingerprint: tls.fingerprint }, { name: "test-cluster-conf" });
    defer(() => nc.close());
    const jsm = await jetstreamManager(nc, { checkAPI: false });
    const name = `CLUSTER_CONF_${process.pid}`;
    const info = await waitFor(async () => jsm.streams.add({ name, subjects: [`cluster.conf.${process.pid}`], num_replicas: 3 }).catch(() => undefined),
      { timeoutMs: 30_000, intervalMs: 250, name: "an R3 stream placed on the three servers" })
      .catch((error: unknown) => { throw new Error(`${String(error)}\n${readFileSync(configs[0]!.logFile, "utf8").slice(-1500)}`); });
    assert.equal(info.config.num_replicas, 3);
    assert.equal((info.cluster?.replicas ?? []).length, 2, "a leader and two replicas on the routed servers");
    assert.equal(info.cluster?.name, CLUSTER_NAME);
  });
});
