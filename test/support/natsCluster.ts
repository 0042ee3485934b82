import { jetstreamManager, StorageType } from "@nats-io/jetstream";
import { connect, type ConnectionOptions } from "@nats-io/transport-node";
import { freePort } from "../../installer/serverConfig.ts";
import { startNatsServer, uniqueName, waitFor, type NatsServer } from "./natsServer.ts";

/**
 * A JetStream cluster of real nats-servers for tests (issue 14, R60..R62): `size` servers on
 * 127.0.0.1, each with its own client port (chosen by the server), its own route port, its own
 * store folder and server name, routes to all the others, one cluster name. Resolves once JetStream
 * has a meta leader (streams can be created). `stop()` from `after`.
 */
export type NatsCluster = {
  servers: NatsServer[];
  /** Every server's client address, `nats://127.0.0.1:<port>`, in server order. */
  urls: string[];
  /** The server whose `server_name` is `name` (the names are `s1`, `s2`, ...). */
  byName(name: string): NatsServer;
  /**
   * Starts the server named `name` again over its own folder and configuration (after kill()):
   * its store and route port are the same, its client port is new. Resolves once it listens.
   */
  restart(name: string): Promise<NatsServer>;
  stop(): Promise<void>;
};

/** Server names of the cluster's servers, in order. */
export function clusterServerName(index: number): string {
  return `s${index + 1}`;
}

/** Settings of startNatsCluster: extra configuration, and how the readiness probe dials. */
type ClusterOptions = { config?: string; readyAs?: Partial<ConnectionOptions> };

/** Attempts of startNatsCluster when a route port it chose was taken before its server bound it. */
const CLUSTER_START_ATTEMPTS = 3;

/**
 * Starts the cluster; `config` is appended to every server's configuration (authorization, tls,
 * ...). `readyAs`: how the readiness probe dials (its authenticator, when `config` has
 * authorization); the probe creates and deletes a stream, so that user needs the JetStream API. Route ports are chosen free and then bound by the servers, so on a shared machine another
 * process may take one in between ("address already in use"): the cluster is then started again
 * on new ports, up to CLUSTER_START_ATTEMPTS times.
 */
export async function startNatsCluster(size = 3, options: ClusterOptions = {}): Promise<NatsCluster> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await startNatsClusterOnce(size, options);
    } catch (error) {
      const taken = error instanceof Error && /address already in use/.test(error.message);
      if (!taken || attempt >= CLUSTER_START_ATTEMPTS) throw error;
    }
  }
}

async function startNatsClusterOnce(size: number, options: ClusterOptions): Promise<NatsCluster> {
  const routePorts: number[] = [];
  for (let i = 0; i < size; i += 1) routePorts.push(await freePort());
  const servers: NatsServer[] = [];
  const configs: string[] = [];
  const indexOf = (name: string): number => {
    const index = Number(name.slice(1)) - 1;
    if (!servers[index] || clusterServerName(index) !== name) throw new Error(`no server named ${name} in this cluster`);
    return index;
  };
  try {
    for (let i = 0; i < size; i += 1) {
      const routes = routePorts.filter((_, j) => j !== i).map((p) => `"nats-route://127.0.0.1:${p}"`);
      configs.push([
        `server_name: "${clusterServerName(i)}"`,
        `cluster { name: "mesh-test", listen: "127.0.0.1:${routePorts[i]}", routes: [ ${routes.join(", ")} ] }`,
        options.config ?? "",
      ].join("\n"));
      servers.push(await startNatsServer({ config: configs[i]! }));
    }
    const urls = servers.map((s) => s.url);
    // Ready once a stream of `size` replicas can be placed: the meta group has a leader and knows
    // every peer (before that, creation answers "no suitable peers for placement").
    const nc = await connect({ ...options.readyAs, servers: urls, name: "test-cluster-ready" });
    const probe = uniqueName("HARNESS_READY");
    try {
      await waitFor(async () => {
        try {
          const jsm = await jetstreamManager(nc, { timeout: 2_000 });
          await jsm.streams.add({ name: probe, subjects: [`harness.ready.${probe}`], num_replicas: size, storage: StorageType.Memory });
          await jsm.streams.delete(probe);
          return true;
        } catch {
          return false;
        }
      }, { timeoutMs: 30_000, intervalMs: 200, name: "the cluster's JetStream meta leader" });
    } finally {
      await nc.close();
    }
    return {
      servers,
      urls,
      byName: (name) => servers[indexOf(name)]!,
      restart: async (name) => {
        const index = indexOf(name);
        const old = servers[index]!;
        await old.kill();
        const again = await startNatsServer({ dir: old.dir, config: configs[index]! });
        // The folder is the old server's: the cluster's stop removes it with the others.
        servers[index] = { ...again, stop: async () => { await again.stop(); await old.stop(); } };
        urls[index] = again.url;
        return servers[index]!;
      },
      stop: async () => { for (const s of servers) await s.stop(); },
    };
  } catch (error) {
    for (const s of servers) await s.stop().catch(() => undefined);
    throw error;
  }
}
