import { before, after } from "node:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { connectToBus } from "../../src/bus/connect.ts";
import { parseControllerConfig, type Environment } from "../../src/config.ts";
import { openCatalogue } from "../../src/records/catalogue.ts";
import { newFreshSecret, newMeshKey, newNodeKeyPair, newUserKey, openAsNode, sealWithMeshKey } from "../../src/crypto/secrets.ts";
import { startController, type Controller } from "../../src/bootstrap/main.ts";
import { memoryLog } from "../../src/bootstrap/log.ts";
import type { AnyReply as Reply } from "../../src/contracts/verbs.ts";
import { askAs } from "./client.ts";
import {
  CONTROL_STREAM, USER_LIST_DIGEST_HEADER, USER_LIST_PART_HEADER, declarationConsumer, declarationSubject, reportSubject,
} from "../../src/names.ts";
import { BOOTSTRAP_SEED, BOOTSTRAP_USER } from "../../src/genesis.ts";
import { GENESIS_COMMAND_ID, decideGenesis } from "../../src/commands/genesis.ts";
import { startNatsServer, type NatsServer } from "./natsServer.ts";

/**
 * A controller over a test nats-server (no TLS, no authorization: the bus's own checks are the
 * host and genesis tests' business): a folder with the mesh key and the controller's credential
 * file at the genesis seed, the genesis commit recorded, an operator connection sending
 * commands on its own inbox, and simulated nodes that read their declarations and report.
 */
export type ControllerFixture = {
  dir: string;
  env: Environment;
  meshKey: string;
  credentialFile: string;
  /** Starts a controller from `env` (parsed by parseControllerConfig); its log lines are kept. */
  start(env?: Environment): Promise<Controller & { lines: string[] }>;
  /** Sends one command as `operator-test` through the typed client and returns the reply (parsed with its contract); throws unless it is ok. */
  send(verb: string, body: Record<string, unknown>): Promise<Reply & { ok: true }>;
  /** Enrols a node with a fresh key pair; returns its private key. */
  enrol(node: string): Promise<string>;
  /**
   * The declarations the node's consumer holds now, newest last, acknowledged. The user-list parts
   * it meets (in this drain or an earlier one) are joined by digest: a declaration naming a list
   * whose parts all came gets the text as `userListText` (not a wire field: added here for tests).
   */
  drain(node: string): Promise<Array<Record<string, unknown>>>;
  /** Publishes a node's report of `digest` (what a host agent does after applying). */
  report(node: string, digest: string, ok?: boolean): void;
  operator: NatsConnection;
  close(): Promise<void>;
};

/** Settings of controllerFixture for a cluster (issue 14). */
export type ControllerFixtureOptions = {
  /** Every server's address: written into the credential file beside the first (R62). */
  addresses?: string[];
  /** Copies of the records (the genesis commit creates CATALOGUE with them); default 1. */
  replicas?: number;
};

/**
 * A suite's fresh nats-server and controller fixture on it: started in the suite's `before`,
 * closed and stopped in its `after`. Read `server` and `fixture` inside tests (set once `before` ran).
 */
export function freshControllerSuite(): { readonly server: NatsServer; readonly fixture: ControllerFixture } {
  const suite = { server: undefined as unknown as NatsServer, fixture: undefined as unknown as ControllerFixture };
  before(async () => {
    suite.server = await startNatsServer();
    suite.fixture = await controllerFixture(suite.server);
  });
  after(async () => {
    await suite.fixture?.close();
    await suite.server?.stop();
  });
  return suite;
}

/** Builds the fixture on `server` (genesis recorded). Call close() from `after`. */
export async function controllerFixture(server: Pick<NatsServer, "url">, options: ControllerFixtureOptions = {}): Promise<ControllerFixture> {
  const dir = mkdtempSync(join(tmpdir(), "mesh-controller-"));
  const meshKey = newMeshKey();
  const keyFile = join(dir, "mesh.key");
  writeFileSync(keyFile, meshKey, { mode: 0o600 });
  const credentialFile = join(dir, "controller.json");
  const addresses = options.addresses === undefined ? {} : { addresses: options.addresses };
  writeFileSync(credentialFile, JSON.stringify({ address: server.url, ...addresses, user: BOOTSTRAP_USER, seed: BOOTSTRAP_SEED }), { mode: 0o600 });
  const env: Environment = {
    MESH_CONTROLLER_CREDENTIAL: credentialFile,
    MESH_KEY_FILE: keyFile,
    MESH_BROKER_FINGERPRINT: Array(32).fill("AB").join(":"),
    ...(options.replicas === undefined ? {} : { MESH_CATALOGUE_REPLICAS: String(options.replicas) }),
  };

  // The genesis commit, as the installer records it.
  const operator = await connectToBus({ address: server.url, ...addresses, user: "operator-test", password: "unused" }, { name: "test-operator", ...(options.addresses ? { reconnectWaitMs: 100 } : {}) });
  const catalogue = await openCatalogue(operator, options.replicas === undefined ? {} : { replicas: options.replicas });
  const genesis = await catalogue.transact(GENESIS_COMMAND_ID, (state) => decideGenesis(state, {
    genesisAddress: server.url,
    fingerprint: Array(32).fill("AB").join(":"),
    bootstrapUser: BOOTSTRAP_USER,
    operator: "test",
    operatorSecret: newFreshSecret((seed) => sealWithMeshKey(meshKey, seed)),
    now: new Date().toISOString(),
  }));
  if (!genesis.ok) throw new Error(`genesis refused: ${genesis.refusal.code}`);

  const controllers: Controller[] = [];
  const js = jetstream(operator);
  /** User-list parts drained so far, by node and list digest (kept across drains). */
  const partsByNode = new Map<string, Map<string, Map<number, Uint8Array>>>();
  const fixture: ControllerFixture = {
    dir, env, meshKey, credentialFile, operator,
    async start(given = env) {
      const log = memoryLog();
      const controller = await startController(parseControllerConfig(given), { log });
      controllers.push(controller);
      return Object.assign(controller, { lines: log.lines });
    },
    async send(verb, body) {
      // Through the typed client: every reply a bus test reads is parsed with its verb's contract.
      const reply = await askAs(operator, "operator-test", verb, body);
      if (!reply.ok) throw new Error(`${verb} refused: ${reply.error.code}: ${reply.error.message}`);
      return reply as Reply & { ok: true };
    },
    async enrol(node) {
      const keys = newNodeKeyPair();
      await fixture.send("node.enrol", { node, publicKey: keys.publicKey, nkey: newUserKey().publicKey });
      return keys.privateKey;
    },
    async drain(node) {
      let consumer;
      try {
        consumer = await js.consumers.get(CONTROL_STREAM, declarationConsumer(node));
      } catch {
        return []; // not raised yet: nothing to read
      }
      const found: Array<Record<string, unknown>> = [];
      if (!partsByNode.has(node)) partsByNode.set(node, new Map());
      const parts = partsByNode.get(node)!;
      for (;;) {
        const m = await consumer.next({ expires: 1_000 });
        if (!m) break;
        if (m.subject === declarationSubject(node)) {
          const declaration = m.json<Record<string, unknown>>();
          const ref = declaration.userList as { digest: string; parts: number } | undefined;
          const stored = ref ? parts.get(ref.digest) : undefined;
          if (ref && stored && stored.size === ref.parts) {
            declaration.userListText = Buffer.concat(Array.from({ length: ref.parts }, (_, i) => stored.get(i)!)).toString("utf8");
          }
          found.push(declaration);
        } else {
          const digest = m.headers?.get(USER_LIST_DIGEST_HEADER) ?? "";
          const index = Number((m.headers?.get(USER_LIST_PART_HEADER) ?? "").split("/")[0]);
          if (!parts.has(digest)) parts.set(digest, new Map());
          parts.get(digest)!.set(index, m.data);
        }
        m.ack();
      }
      return found;
    },
    report(node, digest, ok = true) {
      operator.publish(reportSubject(node), JSON.stringify({ node, digest, ok, ...(ok ? {} : { error: "could not apply" }) }));
    },
    async close() {
      for (const controller of controllers) await controller.stop().catch(() => undefined);
      await operator.close().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return fixture;
}

/** Opens a secret sealed to a node (to check what push sent). */
export { openAsNode };
