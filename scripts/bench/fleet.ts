/**
 * `npm run bench -- fleet [--fleet 1000,10000] [--json]` (or in the table: `--only fleet`): the
 * fleet-level measures of issues 13 and 15, with real connections on a real nats-server 2.9.10
 * over TLS, each beside its raw figure measured in the same run.
 *
 * For each size N, two sides, one after the other, each on a server of its own (TLS with a
 * certificate made like the installer's, the user list as an include file, a pid file, monitoring)
 * and each with its N connections held by FLEET_WORKERS child processes (fleetClients.ts: one
 * event loop doing 10,000 TLS handshakes measured itself, not the bus):
 * - mesh: the server's client TLS as the mesh's servers have it (installer/serverConfig.ts
 *   clientTlsLines); N nodes enrolled through the command server (`node.enrol`, as an operator
 *   sends it), each node's reply opened with its own key as a host does (host/keys credentialFrom),
 *   kept as a credential file (files/credentialFile.ts) and read back from it; the user list
 *   composed from the records (composeBusUsers + renderUserList) and installed as the broker's host
 *   installs it (host/busList installUserList). The N connections dial as host agents do
 *   (connectToBus with host/agent hostDialOptions).
 * - raw: the server's TLS as written by hand before (`timeout: 5`); the same principals' nkey
 *   public keys written by hand into the list (no permissions), N plain nats.js connections
 *   verifying the certificate, the nonce signed natively as nats.go does (src/bus/nkeySigner.ts),
 *   reconnecting through authorization errors with nats.js's own pacing; SIGHUP by hand.
 *
 * Measured on each side:
 * 1. first connect of the N (64 at a time in all);
 * 2. reload: RELOADS principals change, one after another (mesh: `credential.rotate` of a node
 *    recorded, then compose, render, install; raw: that user's entry replaced by a fresh key, the
 *    list rendered, written, SIGHUP and `/varz` polled), each timed from the list's composition
 *    (raw: its rendering) until the new key is admitted, proven on both sides by the same dial (one
 *    nats.js connection verifying the certificate, the nonce signed natively: connectToBus's
 *    certificate probe is a first connect's cost, in row 1, not the reload's); the medians of the
 *    changes and of their parts are reported; every old key must be refused and none of the others
 *    dropped (watched until 2 s after the last change was live). Raw also reloads the mesh's own
 *    list by hand (its permissions, one key changed the same way, MESH_LIST_RELOADS times): what
 *    the permissions cost the server, apart from what the mesh does around the reload;
 * 3. storm: kill -9 of the server and a restart on the same port and store: from the restart to
 *    every connection back, how many authorization errors and TLS handshake failures the server
 *    logged, the dial attempts made, the peak reconnects per second, and any connection not back
 *    within the bound.
 *
 * Sizes: `--fleet 1000` by default; 10,000 on request (the machine is shared: a 10,000 run takes
 * about 15 minutes). `ulimit -n` must be above N + 500 (the server holds N sockets and inherits the
 * limit; the workers hold N / FLEET_WORKERS each).
 */
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { createUser } from "@nats-io/nkeys";
import { connectToBus, secretOf, type BusCredential } from "../../src/bus/connect.ts";
import { nkeySigner } from "../../src/bus/nkeySigner.ts";
import { readBusCredential, writeBusCredential } from "../../src/files/credentialFile.ts";
import { credentialFrom } from "../../src/host/keys.ts";
import { configLoadTime, installUserList } from "../../src/host/busList.ts";
import { composeBusUsers, renderUserList } from "../../src/compose/index.ts";
import type { BusUser } from "../../src/compose/types.ts";
import { openCatalogue } from "../../src/records/catalogue.ts";
import { serveCommands } from "../../src/serve/server.ts";
import { sendCommand } from "../../src/client/send.ts";
import { newMeshKey, newNodeKeyPair, newUserKey, openWithMeshKey, sealWithMeshKey } from "../../src/crypto/secrets.ts";
import { CONTROLLER_NAME } from "../../src/names.ts";
import { makeBusCertificate } from "../../installer/tls.ts";
import { clientTlsLines } from "../../installer/serverConfig.ts";
import { startNatsServer, type NatsServer } from "../../test/support/natsServer.ts";
import { CONCURRENCY, startFleet, type ClientFleet } from "./fleetClients.ts";
import { epochNow } from "./fleetWorker.ts";
import { option } from "./args.ts";

/** The operator the bench sends its commands as (R51: the subject names the asker). */
const OPERATOR = "operator-bench";
/** Child processes holding each side's connections (the same number on both sides). */
export const FLEET_WORKERS = 4;
/** How long after the changes are live the others are still watched for a drop. */
const SETTLE_MS = 2_000;
/** Changes measured per side (each one principal, a different one each time); the figures are their medians. */
export const RELOADS = 5;
/** Reloads of the mesh's own list by hand on the raw side (medians). */
const MESH_LIST_RELOADS = 3;

/** One side's figures at one size (milliseconds unless named otherwise). */
export type FleetSide = {
  /** `nkey`: what the list holds. */
  kind: string;
  connectMs: number;
  /** First dials that failed and were tried again (a TLS handshake past the server's timeout under load). */
  connectRetries: number;
  /** From the list's composition (raw: its rendering) until the changed principal's new key is admitted (median of RELOADS changes). */
  toLiveMs: number;
  /** Each change's toLiveMs, in order. */
  toLiveRunsMs: number[];
  /** SIGHUP until `/varz` `config_load_time` moved (median). */
  reloadMs: number;
  /** The parts of toLiveMs, each its median (mesh: compose, render, install (its reload included), dial; raw: render, write, reload, dial). */
  parts: Record<string, number>;
  /** Raw only: the mesh's own list (its permissions), one key changed, written and reloaded by hand (medians of MESH_LIST_RELOADS). */
  withMeshList?: { toLiveMs: number; reloadMs: number };
  /** Every changed principal's old key refused after its change (it must be). */
  oldKeyRefused: boolean;
  /** Others dropped by the reload (must be 0). */
  droppedByReload: number;
  /** From the restart (after kill -9) until every connection was back. */
  stormMs: number | null;
  /** Connections not back within the storm's bound. */
  stormLost: number;
  /** Authorization errors and TLS handshake failures in the server's log during the storm. */
  stormAuthFailures: number;
  /** Dial attempts the clients made from the kill until the storm ended. */
  stormAttempts: number;
  /** Most reconnects seen in one second of the storm. */
  stormPeakPerSecond: number;
  /** Of the connections not back, how many the client had closed (gave up) rather than still trying. */
  stormClosed: number;
  /** The first authorization lines of the server's log during the storm (what the failures were). */
  stormAuthSample: string[];
  /** Why the storm could not be run to its end (the server not ready again, say). */
  stormFailed?: string;
};

/** A side that could not be measured: why (the other side's figures are kept). */
export type FleetFailure = { failed: string };
export type FleetRow = { size: number; workers: number; mesh: FleetSide; raw: FleetSide | FleetFailure };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const round = (ms: number) => Math.round(ms);

/** A bus server with TLS and an include file for its users, restartable on the same port and store. */
type Bus = {
  server: NatsServer; dir: string; usersFile: string; pidFile: string; monitorUrl: string; certFile: string; pem: string; fingerprint: string;
  restart(): Promise<void>;
  stop(): Promise<void>;
};

/** `tls`: the server's client TLS block, given the certificate and key files. */
async function startBus(label: string, firstList: string, tls: (certFile: string, keyFile: string) => string[]): Promise<Bus> {
  const dir = mkdtempSync(join(tmpdir(), `mesh-bench-fleet-${label}-`));
  const certificate = await makeBusCertificate(dir, []);
  const usersFile = join(dir, "users.conf");
  const pidFile = join(dir, "server.pid");
  writeFileSync(usersFile, firstList, { mode: 0o600 });
  const config = [
    ...tls(certificate.certFile, certificate.keyFile),
    `pid_file: "${pidFile}"`,
    `max_connections: 65536`,
    `write_deadline: "10s"`,
    `include "users.conf"`,
  ].join("\n");
  let server = await startNatsServer({ dir, config });
  const bus: Bus = {
    server, dir, usersFile, pidFile, certFile: certificate.certFile, pem: readFileSync(certificate.certFile, "utf8"), fingerprint: certificate.fingerprint,
    monitorUrl: `http://127.0.0.1:${server.monitorPort}`,
    async restart() {
      // Every client dials the port while the server starts (and recovers its store): it is ready late.
      server = await startNatsServer({ dir, config, port: bus.server.port, readyTimeoutMs: 120_000 });
      bus.server = server;
      bus.monitorUrl = `http://127.0.0.1:${server.monitorPort}`;
    },
    async stop() {
      await bus.server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return bus;
}

/** The raw side's server TLS: as the bench wrote it by hand before the mesh chose its own. */
const rawTls = (certFile: string, keyFile: string) => [`tls { cert_file: "${certFile}", key_file: "${keyFile}", timeout: 5 }`];

/** The admin users of both sides (the bench's own connections: all subjects), nkey users (R63) with their seeds. */
function admins(): { users: BusUser[]; seeds: Record<string, string> } {
  const all = { publish: { allow: [">"] }, subscribe: { allow: [">"] } };
  const keys = { "bench-admin": newUserKey(), [OPERATOR]: newUserKey() };
  return {
    seeds: Object.fromEntries(Object.entries(keys).map(([user, key]) => [user, key.seed])),
    users: Object.entries(keys).map(([user, key]) => ({
      user, nkey: key.publicKey, permissions: all, principal: { kind: "controller" as const, name: CONTROLLER_NAME },
    })),
  };
}

/** A hand-written user list: each user's nkey alone, no permissions (the raw baseline). */
function rawList(keys: readonly string[]): string {
  return ["authorization {", "  users = [", ...keys.map((key) => `    {nkey: "${key}"}`), "  ]", "}", ""].join("\n");
}

/**
 * The dial that proves a key is admitted, the same on both sides: one nats.js connection verifying
 * the bus certificate, the nonce signed natively, no reconnect. Throws when refused.
 */
async function dialOnce(bus: Bus, seed: string): Promise<void> {
  const signer = nkeySigner(seed);
  const nc: NatsConnection = await connect({
    servers: `127.0.0.1:${bus.server.port}`, tls: { ca: bus.pem },
    authenticator: (nonce?: string) => ({ nkey: signer.publicKey, sig: nonce ? signer.sign(nonce) : "" }),
    timeout: 10_000, reconnect: false, maxReconnectAttempts: 0,
  });
  await nc.close();
}

/** Dials until `seed` is admitted (bounded); returns the milliseconds it took. */
async function admitted(bus: Bus, seed: string, timeoutMs: number): Promise<number> {
  const t = performance.now();
  for (;;) {
    try {
      await dialOnce(bus, seed);
      return performance.now() - t;
    } catch (error) {
      if (performance.now() - t > timeoutMs) throw error;
      await sleep(20);
    }
  }
}

async function refused(bus: Bus, seed: string): Promise<boolean> {
  return dialOnce(bus, seed).then(() => false, () => true);
}

/**
 * Reads `/varz` `config_load_time`, sends SIGHUP to the bus and waits for it to move (polled every
 * 10 ms, as installUserList does); returns the milliseconds from the signal (`reloadMs`) and from
 * the first read (`totalMs`).
 */
async function reloadByHand(bus: Bus): Promise<{ reloadMs: number; totalMs: number }> {
  const t0 = performance.now();
  const before = await configLoadTime(bus.monitorUrl);
  const t = performance.now();
  process.kill(Number(readFileSync(bus.pidFile, "utf8").trim()), "SIGHUP");
  while ((await configLoadTime(bus.monitorUrl).catch(() => before)) === before) await sleep(10);
  const end = performance.now();
  return { reloadMs: end - t, totalMs: end - t0 };
}

/** kill -9, restart on the same port and store, and wait (bounded) for every connection to be back. */
async function storm(bus: Bus, fleet: ClientFleet, boundMs: number): Promise<Pick<FleetSide, "stormMs" | "stormLost" | "stormAuthFailures" | "stormAttempts" | "stormPeakPerSecond" | "stormClosed" | "stormAuthSample" | "stormFailed">> {
  const logFile = join(bus.dir, "server.log");
  await bus.server.kill();
  const logBefore = readFileSync(logFile, "utf8").length;
  // Every client has noticed the loss before the restart (the raw and the mesh side alike).
  const noticed = performance.now() + 10_000;
  while ((await fleet.status()).unaware > 0 && performance.now() < noticed) await sleep(50);
  const t = epochNow();
  await bus.restart();
  const deadline = performance.now() + boundMs;
  let status = await fleet.status(t);
  while (status.back < status.size && status.back + status.closedNotBack < status.size && performance.now() < deadline) {
    await sleep(250);
    status = await fleet.status(t);
  }
  const log = readFileSync(logFile, "utf8").slice(logBefore);
  const authLines = log.split("\n").filter((line) => /authoriz|authentication timeout|TLS handshake (error|timeout)/i.test(line));
  return {
    stormMs: status.back === status.size ? round(status.lastBackAt - t) : null,
    stormLost: status.size - status.back,
    stormAuthFailures: authLines.length,
    stormAttempts: status.attempts,
    stormPeakPerSecond: Math.max(0, ...status.perSecond),
    stormClosed: status.closedNotBack,
    // The log line without its time and client address: what kind of failure it was.
    stormAuthSample: [...new Set(authLines.map((line) => line.replace(/^.*?\[(?:ERR|WRN|INF|DBG|TRC)\] /, "").replace(/ - cid:\d+/g, "").replace(/\d+\.\d+\.\d+\.\d+:\d+/g, "<address>")))].slice(0, 3),
  };
}

/** What a change gives measureSide: its parts' times, and the seeds that must now be admitted and refused. */
type Made = { parts: Record<string, number>; reloadMs: number; newSeed: string; oldSeed: string };

/** The median of `values` (the lower middle one of an even count). */
function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)] ?? Number.NaN;
}

/** The principals the reloads change (one each), left out of the drops and the storm. */
function changedPrincipals(size: number): number[] {
  return Array.from({ length: Math.min(RELOADS, size - 1) }, (_, k) => Math.floor(size / 2) + k);
}

/**
 * One side's measures once its fleet is connected (see the module comment): `prepare(k)` makes
 * change k (untimed: the rotation recorded, a key made) and returns the timed half; each change's
 * new key must be admitted and its old one refused; the figures are the medians over the changes.
 */
async function measureSide(
  kind: string, bus: Bus, fleet: ClientFleet, changed: readonly number[], prepare: (k: number) => Promise<() => Promise<Made>>, stormBoundMs: number,
  extra?: () => Promise<FleetSide["withMeshList"]>,
): Promise<FleetSide> {
  await fleet.mark([...changed]);
  const runs: Array<{ toLiveMs: number; reloadMs: number; parts: Record<string, number>; oldKeyRefused: boolean }> = [];
  for (const k of changed.keys()) {
    const change = await prepare(k);
    const t = performance.now();
    const made = await change();
    const dialMs = await admitted(bus, made.newSeed, 60_000);
    const toLiveMs = performance.now() - t;
    runs.push({ toLiveMs, reloadMs: made.reloadMs, parts: { ...made.parts, dial: dialMs }, oldKeyRefused: await refused(bus, made.oldSeed) });
  }
  await sleep(SETTLE_MS);
  const droppedByReload = (await fleet.status()).dropped;
  const withMeshList = extra ? await extra() : undefined;
  await fleet.mark([...changed]);
  // A storm that cannot be run (the server not ready again) is a storm failed, not a side lost.
  const stormed = await storm(bus, fleet, stormBoundMs).catch((error: unknown) => ({
    stormMs: null, stormLost: fleet.size - changed.length, stormAuthFailures: 0, stormAttempts: 0, stormPeakPerSecond: 0, stormClosed: 0,
    stormAuthSample: [], stormFailed: error instanceof Error ? error.message.split("\n")[0]! : String(error),
  }));
  return {
    kind, connectMs: round(fleet.connectMs), connectRetries: fleet.retries,
    toLiveMs: round(median(runs.map((r) => r.toLiveMs))), reloadMs: round(median(runs.map((r) => r.reloadMs))),
    toLiveRunsMs: runs.map((r) => round(r.toLiveMs)),
    parts: Object.fromEntries(Object.keys(runs[0]?.parts ?? {}).map((name) => [name, round(median(runs.map((r) => r.parts[name] ?? Number.NaN)))])),
    ...(withMeshList ? { withMeshList } : {}),
    oldKeyRefused: runs.every((r) => r.oldKeyRefused), droppedByReload, ...stormed,
  };
}

/** The mesh side at `size` nodes; returns its figures and what the raw side reuses (credentials, the installed list). */
async function meshSide(size: number, stormBoundMs: number, log: (line: string) => void): Promise<{ side: FleetSide; credentials: BusCredential[]; listText: string; changed: number[] }> {
  const admin = admins();
  const bus = await startBus("mesh", renderUserList({ users: admin.users }), clientTlsLines);
  const credentialsDir = join(bus.dir, "credentials");
  mkdirSync(credentialsDir, { mode: 0o700 });
  const address = `tls://127.0.0.1:${bus.server.port}`;
  const dialAdmin = (user: string) => connectToBus({ address, user, seed: admin.seeds[user]!, fingerprint: bus.fingerprint }, { name: user });
  const controllerNc = await dialAdmin("bench-admin");
  const operatorNc = await dialAdmin(OPERATOR);
  let fleet: ClientFleet | undefined;
  try {
    const catalogue = await openCatalogue(controllerNc);
    const genesis = await catalogue.transact("genesis", () => ({
      ok: true,
      entity: { kind: "mesh", id: "mesh" },
      events: [{ type: "MeshCreated", actor: "installer", commandId: "genesis", at: new Date().toISOString(), genesisAddress: address, fingerprint: bus.fingerprint, bootstrapUser: "bench-admin" }],
    }));
    if (!genesis.ok) throw new Error(`genesis refused: ${genesis.refusal.code}`);
    const meshKey = newMeshKey();
    const commands = serveCommands(controllerNc, catalogue, {
      sealSecret: (secret) => sealWithMeshKey(meshKey, secret),
      openSecret: (sealed) => openWithMeshKey(meshKey, sealed),
      now: () => new Date(),
      newId: () => randomUUID(),
      log: { info: () => undefined, error: (line) => log(`controller: ${line}`) },
    });
    await controllerNc.flush(); // the command subscription is on the server before the first request
    // Enrol every node as a host would: its own key pair, the reply opened with it, the credential kept in a file.
    const t = performance.now();
    const seeds: string[] = [];
    const files: string[] = [];
    let next = 0;
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, size) }, async () => {
      for (let i = next++; i < size; i = next++) {
        const node = `n${i}`;
        // Its keys are generated here, as its host would (R64): the reply carries none.
        const keys = newNodeKeyPair();
        const user = newUserKey();
        seeds[i] = user.seed;
        const reply = await sendCommand(operatorNc, OPERATOR, "node.enrol", { node, publicKey: keys.publicKey, nkey: user.publicKey }, { timeoutMs: 60_000 });
        if (!reply.ok) throw new Error(`node.enrol ${node} refused: ${reply.error.code}`);
        files[i] = join(credentialsDir, `${node}.json`);
        writeBusCredential(files[i]!, credentialFrom(reply, () => ({ current: user.seed, pending: undefined })));
      }
    }));
    log(`  mesh: ${size} nodes enrolled in ${round(performance.now() - t)} ms`);
    const composeList = () => {
      const composed = composeBusUsers(catalogue.state, { controllerSubmits: [] });
      if (!composed.ok) throw new Error(`the user list is refused: ${composed.refusal.code}`);
      return composed.users;
    };
    const reload = { includeFile: bus.usersFile, configFile: bus.server.configFile, pid: bus.pidFile, monitorUrl: bus.monitorUrl, reloadTimeoutMs: 300_000 };
    const firstUsers = composeList();
    await installUserList(renderUserList({ users: [...admin.users, ...firstUsers] }), reload);
    const kind = firstUsers.every((u) => typeof u.nkey === "string") ? "nkey" : "mixed";

    const credentials = files.map((file) => readBusCredential(file));
    fleet = await startFleet(FLEET_WORKERS, credentials, { side: "mesh" });
    log(`  mesh: ${size} connected (${kind}) in ${round(fleet.connectMs)} ms, ${fleet.retries} dials retried`);

    const changed = changedPrincipals(size);
    let listText = "";
    const side = await measureSide(kind, bus, fleet, changed, async (k) => {
      // The change is recorded first (a rotation, R48: its key made on the node, R64); not timed.
      const index = changed[k]!;
      const node = `n${index}`;
      const rotated = newUserKey();
      const reply = await sendCommand(operatorNc, OPERATOR, "credential.rotate", { kind: "node", name: node, nkey: rotated.publicKey }, { timeoutMs: 60_000 });
      if (!reply.ok) throw new Error(`credential.rotate ${node} refused: ${reply.error.code}`);
      writeBusCredential(files[index]!, credentialFrom(reply, () => ({ current: seeds[index], pending: rotated.seed })));
      await catalogue.catchUp();
      return async () => {
        const t0 = performance.now();
        const users = composeList();
        const t1 = performance.now();
        listText = renderUserList({ users: [...admin.users, ...users] });
        const t2 = performance.now();
        const installed = await installUserList(listText, reload);
        const t3 = performance.now();
        return {
          parts: { compose: t1 - t0, render: t2 - t1, install: t3 - t2 },
          reloadMs: installed.reloadMs ?? Number.NaN,
          newSeed: secretOf(readBusCredential(files[index]!)),
          oldSeed: seeds[index]!,
        };
      };
    }, stormBoundMs);
    await commands.stop();
    return { side, credentials, listText, changed };
  } finally {
    await fleet?.close();
    await controllerNc.close().catch(() => undefined);
    await operatorNc.close().catch(() => undefined);
    await bus.stop();
  }
}

/**
 * The raw side: the same nodes' keys by hand, plain nats.js clients, SIGHUP by hand; then the
 * mesh's own installed list (`meshList`), with the changed node's key replaced the same way.
 */
async function rawSide(credentials: readonly BusCredential[], meshList: string, changed: readonly number[], stormBoundMs: number, log: (line: string) => void): Promise<FleetSide> {
  const seeds = credentials.map((c) => secretOf(c));
  const keys = seeds.map((seed) => nkeySigner(seed).publicKey);
  const bus = await startBus("raw", rawList(keys), rawTls);
  let fleet: ClientFleet | undefined;
  try {
    fleet = await startFleet(FLEET_WORKERS, credentials, { side: "raw", port: bus.server.port, pem: bus.pem });
    log(`  raw: ${credentials.length} connected in ${round(fleet.connectMs)} ms, ${fleet.retries} dials retried`);
    const fresh = () => {
      const pair = createUser();
      return { seed: new TextDecoder().decode(pair.getSeed()), publicKey: pair.getPublicKey() };
    };
    const byHand = async (text: string) => {
      const t0 = performance.now();
      writeFileSync(bus.usersFile, text);
      const write = performance.now() - t0;
      return { write, ...(await reloadByHand(bus)) };
    };
    // The mesh's list, the first changed node's key swapped for a fresh one each time: written and reloaded by hand.
    const withMeshList = async () => {
      const runs: Array<{ toLiveMs: number; reloadMs: number }> = [];
      const line = new RegExp(`\\{nkey: "U[A-Z2-7]{55}"(?=[^\\n]*# node-n${changed[0]}\\n)`);
      if (!line.test(meshList)) throw new Error(`node n${changed[0]} is not on the mesh's list`);
      for (let k = 0; k < MESH_LIST_RELOADS; k += 1) {
        const swap = fresh();
        const t = performance.now();
        const { reloadMs } = await byHand(meshList.replace(line, `{nkey: "${swap.publicKey}"`));
        await admitted(bus, swap.seed, 60_000);
        runs.push({ toLiveMs: performance.now() - t, reloadMs });
      }
      return { toLiveMs: round(median(runs.map((r) => r.toLiveMs))), reloadMs: round(median(runs.map((r) => r.reloadMs))) };
    };
    const side = await measureSide("nkey", bus, fleet, changed, async (k) => {
      const index = changed[k]!;
      const swap = fresh();
      return async () => {
        const t0 = performance.now();
        keys[index] = swap.publicKey;
        const text = rawList(keys);
        const t1 = performance.now();
        const { write, reloadMs, totalMs } = await byHand(text);
        return { parts: { render: t1 - t0, write, reload: totalMs }, reloadMs, newSeed: swap.seed, oldSeed: seeds[index]! };
      };
    }, stormBoundMs, async () => {
      const figures = await withMeshList();
      // The storm is raw's own: the hand-written list (no permissions) back in place.
      await byHand(rawList(keys));
      return figures;
    });
    return side;
  } finally {
    await fleet?.close();
    await bus.stop();
  }
}

/** Both sides at `size` (mesh first, then raw with the same keys). */
export async function measureFleet(size: number, log: (line: string) => void = (line) => console.error(line)): Promise<FleetRow> {
  const limit = Number(execFileSync("sh", ["-c", "ulimit -n"], { encoding: "utf8" }).trim());
  if (Number.isFinite(limit) && limit < size + 500) {
    throw new Error(`ulimit -n is ${limit}: ${size} connections need at least ${size + 500} (the server holds one socket per connection and inherits this limit); raise it (ulimit -n ${2 * size}) and run again`);
  }
  const stormBoundMs = Math.max(60_000, size * 10);
  log(`fleet ${size}: mesh side`);
  const mesh = await meshSide(size, stormBoundMs, log);
  log(`fleet ${size}: mesh ${JSON.stringify(mesh.side)}`);
  log(`fleet ${size}: raw side (${mesh.side.kind})`);
  let raw: FleetSide | FleetFailure;
  try {
    raw = await rawSide(mesh.credentials, mesh.listText, mesh.changed, stormBoundMs, log);
    log(`fleet ${size}: raw ${JSON.stringify(raw)}`);
  } catch (error) {
    raw = { failed: error instanceof Error ? error.message.split("\n")[0]! : String(error) };
  }
  return { size, workers: FLEET_WORKERS, mesh: mesh.side, raw };
}

/** `--fleet 1000,10000` (default 1000); `--json` prints the rows as JSON. */
export async function run(args: string[]): Promise<void> {
  const given = option(args, "--fleet");
  const sizes = (given ?? "1000").split(",").map(Number).filter((n) => Number.isInteger(n) && n > 1);
  const rows: FleetRow[] = [];
  for (const size of sizes) rows.push(await measureFleet(size));
  console.log(JSON.stringify(rows, null, 2));
}
