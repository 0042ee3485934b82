import { randomUUID } from "node:crypto";
import type { NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { openCatalogue, type Catalogue } from "../../src/records/catalogue.ts";
import { serveCommands, type CommandServer, type ShellVerbs } from "../../src/serve/server.ts";
import { newMeshKey, openWithMeshKey, sealWithMeshKey } from "../../src/crypto/secrets.ts";
import { connectToBus } from "../../src/bus/connect.ts";
import { CONTROLLER_DIAL } from "../../src/bootstrap/main.ts";
import { keptMark } from "../../src/bootstrap/recordsMark.ts";
import { CATALOGUE_STREAM, CONTROLLER_NAME, busUser } from "../../src/names.ts";
import { startNatsServer, type NatsServer, type NatsServerOptions } from "./natsServer.ts";

/** A fingerprint for genesis records of tests (any 32 bytes will do without TLS). */
export const TEST_FINGERPRINT = Array.from({ length: 32 }, (_, i) => i.toString(16).padStart(2, "0").toUpperCase()).join(":");

/**
 * A controller serving commands on a real nats-server, for tests: the server, the controller's
 * connection (dialled as the controller dials, CONTROLLER_DIAL; its own inbox prefix, R33), the
 * catalogue with its genesis record, the command server, the mesh key and the server's error log
 * lines. `stop()` from `after`.
 */
export type CommandMesh = {
  server: NatsServer;
  nc: NatsConnection;
  catalogue: Catalogue;
  commands: CommandServer;
  meshKey: string;
  errors: string[];
  infos: string[];
  /** The CATALOGUE stream's last sequence, read from the server. */
  lastSequence(): Promise<number>;
  stop(): Promise<void>;
};

/** Starts a server, opens the catalogue, appends MeshCreated and serves commands. */
export async function startCommandMesh(options: {
  server?: NatsServerOptions;
  duplicateWindowMs?: number;
  /** Shell verbs (push, reports, replay) to serve beside the registry's. */
  shellVerbs?: ShellVerbs;
  /** Keep the records' mark in this folder as the controller does (keptMark, R43); default: none. */
  stateDir?: string;
} = {}): Promise<CommandMesh> {
  const server = await startNatsServer(options.server ?? {});
  const controllerUser = busUser("controller", CONTROLLER_NAME);
  // Dialled as the controller dials (CONTROLLER_DIAL), so that the command bench measures what
  // ships; the server checks no credential, the password is only there to make one.
  const nc = await connectToBus({ address: server.url, user: controllerUser, password: "test" }, CONTROLLER_DIAL);
  const catalogue = await openCatalogue(nc, {
    ...(options.duplicateWindowMs === undefined ? {} : { duplicateWindowMs: options.duplicateWindowMs }),
    ...(options.stateDir === undefined ? {} : keptMark(options.stateDir)),
  });
  const created = await catalogue.transact("genesis", () => ({
    ok: true,
    entity: { kind: "mesh", id: "mesh" },
    events: [{
      type: "MeshCreated", actor: "installer", commandId: "genesis", at: new Date().toISOString(),
      genesisAddress: `tls://127.0.0.1:${server.port}`, fingerprint: TEST_FINGERPRINT, bootstrapUser: controllerUser,
    }],
  }));
  if (!created.ok) throw new Error(`genesis refused: ${created.refusal.message}`);
  const meshKey = newMeshKey();
  const errors: string[] = [];
  const infos: string[] = [];
  const commands = serveCommands(nc, catalogue, {
    sealSecret: (password) => sealWithMeshKey(meshKey, password),
    openSecret: (sealed) => openWithMeshKey(meshKey, sealed),
    now: () => new Date(),
    newId: () => randomUUID(),
    log: { info: (line) => { infos.push(line); }, error: (line) => { errors.push(line); } },
  }, options.shellVerbs);
  const jsm = await jetstreamManager(nc);
  return {
    server, nc, catalogue, commands, meshKey, errors, infos,
    lastSequence: async () => (await jsm.streams.info(CATALOGUE_STREAM)).state.last_seq,
    stop: async () => {
      await commands.stop();
      await nc.close();
      await server.stop();
    },
  };
}
