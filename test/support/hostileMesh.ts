import assert from "node:assert/strict";
import { createHash, randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import type { PermissionViolationError } from "@nats-io/nats-core";
import { jetstream, jetstreamManager, type StreamConfig } from "@nats-io/jetstream";
import { connectToBus } from "../../src/bus/connect.ts";
import { composeBusUsers, composeTopology, renderUserList } from "../../src/compose/index.ts";
import type { DeclarationBody } from "../../src/contracts/declaration.ts";
import { openCatalogue, type Catalogue } from "../../src/records/catalogue.ts";
import { serveCommands, type CommandServer } from "../../src/serve/server.ts";
import { watchReports } from "../../src/bootstrap/reportWatch.ts";
import { watchRecords } from "../../src/bootstrap/recordsWatch.ts";
import { acquireLease, type HeldLease } from "../../src/bootstrap/lease.ts";
import { reportsStreamSpec } from "../../src/controller/planRaise.ts";
import { initHostKeys, startHost, type Host } from "../../src/host/index.ts";
import { newMeshKey, openWithMeshKey, sealWithMeshKey } from "../../src/crypto/secrets.ts";
import {
  CATALOGUE_STREAM, CONTROLLER_NAME, CONTROL_STREAM, busUser, commandSubject, declarationConsumer, declarationSubject, inboxPrefix,
  reportSubject, streamUpdatedAdvisory, userListPartSubject, workConsumer, workStream, workSubject,
} from "../../src/names.ts";
import { askAs } from "./client.ts";
import { watchViolations } from "./violations.ts";
import { waitFor } from "./natsServer.ts";
import { EXAMPLE_CONFIG, exampleMesh } from "../unit/compose/exampleMesh.ts";

/**
 * The example mesh's victims and attackers on real nats-servers running its composed user list
 * (R65): the controller's long-lived subscribers (the command server, twice in one queue group as
 * a cluster runs it, the report watch, the records' advisory watch, the lease) and node alpha's host
 * agent; the attackers dial with their own composed grants (node beta, module build-machine,
 * builder ci, operator ada). Built by startHostileMesh; `stop()` from `after`.
 */
export type HostileMesh = {
  /** Lines every victim logged (the controller's and the host's), for the bounded-log checks. */
  lines: string[];
  /** The controller's connections (one per command server). */
  controllers: NatsConnection[];
  commands: CommandServer[];
  host: Host;
  hostLines: string[];
  lease: HeldLease;
  leaseLost: string[];
  /** Dials `user` with its own composed grants; the connection's refused operations are collected. */
  dial(user: string): Promise<{ nc: NatsConnection; violations: PermissionViolationError[] }>;
  /** Publishes a declaration for alpha as the controller does and returns its digest. */
  declare(): Promise<string>;
  stop(): Promise<void>;
};

export const CONTROLLER = busUser("controller", CONTROLLER_NAME);
export const ADA = busUser("operator", "ada");
export const BETA = busUser("node", "beta");
export const ALPHA = busUser("node", "alpha");
export const BUILDER = busUser("builder", "ci");
export const BUILD_MACHINE = busUser("module", "build-machine");
const BUILD_SEAT = "mesh-build";

/** The composed user list of the example mesh, as the broker's holder installs it. */
export function hostileUserList(): { text: string; secrets: Record<string, string> } {
  const mesh = exampleMesh();
  const users = composeBusUsers(mesh.state, EXAMPLE_CONFIG);
  assert.ok(users.ok, "the example mesh composes a user list");
  return { text: renderUserList(users), secrets: mesh.secrets };
}

/** Starts the victims on `urls` (one server, or every server of a cluster: each controller dials its own first). */
export async function startHostileMesh(urls: string[], secrets: Record<string, string>): Promise<HostileMesh> {
  const mesh = exampleMesh();
  const open: NatsConnection[] = [];
  const lines: string[] = [];
  const log = { info: (line: string) => { lines.push(line); }, error: (line: string) => { lines.push(line); } };
  const credential = (user: string, first = 0) => {
    const ordered = [...urls.slice(first), ...urls.slice(0, first)];
    return { address: ordered[0]!, ...(ordered.length > 1 ? { addresses: ordered } : {}), user, seed: secrets[user]! };
  };
  const dial = async (user: string, first = 0) => {
    const nc = await connectToBus(credential(user, first), { name: `r65-${user}`, reconnectWaitMs: 100 });
    open.push(nc);
    return { nc, violations: watchViolations(nc) };
  };

  // The controller raises the composed topology with its own grants (R21) and records the mesh.
  const { nc: first } = await dial(CONTROLLER);
  const jsm = await jetstreamManager(first);
  const topology = composeTopology(mesh.state, EXAMPLE_CONFIG);
  for (const stream of [...topology.streams, reportsStreamSpec(1)]) await jsm.streams.add(stream as Partial<StreamConfig> & { name: string });
  for (const consumer of topology.consumers) await jsm.consumers.add(consumer.stream, consumer.config);
  const catalogue: Catalogue = await openCatalogue(first);
  for (const { commit } of mesh.commits) {
    const appended = await catalogue.transact(commit.commandId, () => ({ ok: true, entity: commit.entity, events: commit.events }));
    assert.ok(appended.ok, `record ${commit.commandId} appended`);
  }
  const meshKey = newMeshKey();
  const deps = {
    sealSecret: (secret: string) => sealWithMeshKey(meshKey, secret),
    openSecret: (sealed: string) => openWithMeshKey(meshKey, sealed),
    now: () => new Date(),
    newId: () => randomUUID(),
    log,
    compose: EXAMPLE_CONFIG,
  };
  // A cluster runs two controllers in one queue group, each dialled to another server first.
  const controllers = [first];
  if (urls.length > 1) controllers.push((await dial(CONTROLLER, 1)).nc);
  const commands: CommandServer[] = [];
  for (const nc of controllers) commands.push(serveCommands(nc, await openCatalogue(nc), deps));
  const reports = await watchReports(first, catalogue, log, () => false);
  const records = watchRecords(first, catalogue, log);
  const leaseLost: string[] = [];
  const lease = await acquireLease(first, { holder: "r65", leaseMs: 3_000, replicas: 1, log, onLost: (reason) => { leaseLost.push(reason); } });

  // Node alpha's host agent, with alpha's composed grants.
  const root = mkdtempSync(join(tmpdir(), "mesh-r65-"));
  const stateDir = join(root, "alpha");
  initHostKeys(stateDir);
  const hostLines: string[] = [];
  const host = startHost({
    stateDir, node: "alpha", credential: credential(ALPHA),
    log: (line) => { hostLines.push(line); lines.push(line); },
    backoff: { initialMs: 50, maxMs: 400 },
  });
  await waitFor(() => host.bound(), { name: "alpha's host agent bound its consumer" });
  for (const nc of controllers) await nc.flush();

  return {
    lines, controllers, commands, host, hostLines, lease, leaseLost,
    dial: (user) => dial(user),
    declare: async () => {
      // The host takes the digest as given (the controller's word): a fresh one per declaration.
      const digest = createHash("sha256").update(randomUUID()).digest("hex");
      const body: DeclarationBody = { v: 1, node: "alpha", modules: [], provisions: [] };
      await jetstream(first).publish(declarationSubject("alpha"), JSON.stringify({ ...body, digest }));
      return digest;
    },
    stop: async () => {
      await host.stop().catch(() => undefined);
      records.stop();
      reports.stop();
      await lease.release().catch(() => undefined);
      for (const nc of open) if (!nc.isClosed()) await nc.close().catch(() => undefined);
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** The largest body the test bus takes with room for headers: just under its 1 MiB max_payload. */
const NEAR_MAX_PAYLOAD = 1024 * 1024 - 4096;

/**
 * The hostile bodies (R65): garbage bytes, empty, ~1 MiB, 100k levels of `[`, another contract
 * version, a field of the wrong type, and `replay` (a real message, sent again).
 */
export function hostileBodies(replay: Uint8Array): Uint8Array[] {
  const text = (s: string) => new TextEncoder().encode(s);
  return [
    Uint8Array.from([0xff, 0xfe, 0x00, 0xc3, 0x28, 0x7b]),
    new Uint8Array(0),
    text(`{"node":"${"x".repeat(NEAR_MAX_PAYLOAD)}"}`),
    text("[".repeat(100_000)),
    text(`${"[".repeat(100_000)}${"]".repeat(100_000)}`),
    text(JSON.stringify({ v: 99, node: "alpha", digest: "0".repeat(64), ok: true })),
    text(JSON.stringify({ v: 1, node: 7, modules: "none" })),
    text("null"),
    replay,
  ];
}

/** The subjects the victims listen on, as the pull trick's reply (R65: the bus does not check it). */
export function victimSubjects(): string[] {
  return [
    commandSubject(BETA, "nodes"),
    commandSubject(ADA, "where"),
    reportSubject("alpha"),
    streamUpdatedAdvisory(CATALOGUE_STREAM),
  ];
}

/** A pull request for one message of `stream`/`consumer` whose delivery goes to `reply`. */
export function pullTo(nc: NatsConnection, stream: string, consumer: string, reply: string): void {
  nc.publish(`$JS.API.CONSUMER.MSG.NEXT.${stream}.${consumer}`, JSON.stringify({ batch: 1, no_wait: true }), { reply });
}

/**
 * Every attacker's corpus, from its own grants: node beta's own CONTROL messages and the builder's
 * work items pulled (by beta and by build-machine) to every victim subject; beta's own report
 * subject and ada's own command subjects carrying every hostile body; the controller's own
 * declaration subject for alpha (the only publisher there) carrying them too. Returns once every
 * attacker's connection flushed; asserts the bus refused none of it (each is within its grants).
 */
export async function attack(mesh: HostileMesh, replayReport: Uint8Array): Promise<void> {
  const bodies = hostileBodies(replayReport);
  const controller = mesh.controllers[0]!;
  const js = jetstream(controller);
  const beta = await mesh.dial(BETA);
  const builder = await mesh.dial(BUILDER);
  const module = await mesh.dial(BUILD_MACHINE);
  const ada = await mesh.dial(ADA);
  // Pending messages for the pull trick: beta's declaration parts and the builder's work items.
  for (let i = 0; i < bodies.length; i += 1) await js.publish(userListPartSubject("beta", i), bodies[i]!);
  for (const body of bodies) builder.nc.publish(workSubject(BUILD_SEAT, "build"), body);
  await builder.nc.flush();
  // Round-robin, so that every victim subject gets pending messages before they run out.
  for (let i = 0; i < 3; i += 1) {
    for (const target of victimSubjects()) {
      pullTo(beta.nc, CONTROL_STREAM, declarationConsumer("beta"), target);
      pullTo(module.nc, workStream(BUILD_SEAT), workConsumer(BUILD_SEAT), target);
    }
  }
  for (const body of bodies) {
    beta.nc.publish(reportSubject("beta"), body);
    ada.nc.publish(commandSubject(ADA, "where"), body, { reply: `${inboxPrefix(ADA)}.r65` });
    ada.nc.publish(commandSubject(ADA, "nodes"), body);
    ada.nc.publish(commandSubject(ADA, "no.such.verb"), body, { reply: `${inboxPrefix(ADA)}.r65` });
    await js.publish(declarationSubject("alpha"), body);
    await js.publish(userListPartSubject("alpha", 0), body);
  }
  for (const session of [beta, builder, module, ada]) await session.nc.flush();
  for (const [who, session] of [["beta", beta], ["builder", builder], ["build-machine", module], ["ada", ada]] as const) {
    assert.deepEqual(session.violations.map((v) => v.message), [], `${who} sent only what its own grants allow`);
  }
}

/** A real query as ada, which must be answered within `timeoutMs`. */
export async function realQuery(mesh: HostileMesh, timeoutMs: number): Promise<void> {
  const ada = await mesh.dial(ADA);
  const reply = await askAs(ada.nc, ADA, "nodes", {}, timeoutMs);
  assert.ok(reply.ok, JSON.stringify(reply).slice(0, 300));
}
