/**
 * `npm run bench -- fleet [--fleet 1000,10000] [--json]` (or in the table: `--only fleet`): the
 * fleet-level measures of issues 13 and 15, with real connections on a real nats-server 2.9.10
 * over TLS, each beside its raw figure measured in the same run.
 *
 * For each size N, two sides, one after the other, each on a server of its own (TLS with a
 * certificate made like the installer's, the user list as an include file, a pid file, monitoring):
 * - mesh: N nodes enrolled through the command server (`node.enrol`, as an operator sends it), each
 *   node's reply opened with its own key as a host does (host/keys credentialFrom), kept as a
 *   credential file (files/credentialFile.ts) and read back from it; the user list composed from
 *   the records (composeBusUsers + renderUserList) and installed as the broker's host installs it
 *   (host/busList installUserList: durable write, `nats-server -t`, SIGHUP, `/varz`
 *   `config_load_time`). N connections dialled through connectToBus with those credentials,
 *   whatever their kind (a password from before nkeys, or an nkey seed).
 * - raw: the same principals' keys (the composed list's bcrypt hashes or nkey public keys, no
 *   permissions) written by hand into the list, N plain nats.js connections verifying the
 *   certificate (an nkey signing natively, as nats.go does: nats.js's own nkeyAuthenticator signs
 *   in JavaScript and is no floor, see src/bus/nkeySigner.ts), SIGHUP by hand.
 *
 * Measured on each side:
 * 1. first connect of the N (64 at a time);
 * 2. reload: one principal changes (mesh: `credential.rotate` of one node recorded, then compose,
 *    install, reload; raw: that user's entry replaced by a fresh key of the same kind, write,
 *    SIGHUP), timed from the list's composition (raw: its write) until the new key is admitted, with
 *    the reload alone (SIGHUP to `config_load_time` moving) beside it; and how many of the N - 1
 *    others were dropped (disconnect events seen until 2 s after the change was live);
 * 3. storm: kill -9 of the server and a restart on the same port and store: from the restart to
 *    every connection back, how many authorization errors and timeouts the server logged after the
 *    restart, the peak reconnect rate per second, and any connection not back within the bound.
 *    Both sides reconnect through authorization errors as a host agent does (connectToBus with
 *    `secret`; nats.js's default gives a connection up after two: at 10,000 bcrypt users that
 *    lost 9,842 of them in this storm).
 *
 * Sizes: `--fleet 1000` by default; 10,000 on request (the machine is shared: a 10,000 run takes
 * minutes). `ulimit -n` must be above N + 500 (each side's server holds N sockets, and so does this
 * process; the server inherits the limit).
 */
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { createUser } from "@nats-io/nkeys";
import { connectToBus, isSeed, secretOf, withSecret, type BusCredential } from "../../src/bus/connect.ts";
import { nkeySigner } from "../../src/bus/nkeySigner.ts";
import { readBusCredential, writeBusCredential } from "../../src/files/credentialFile.ts";
import { credentialFrom } from "../../src/host/keys.ts";
import { configLoadTime, installUserList } from "../../src/host/busList.ts";
import { composeBusUsers, renderUserList } from "../../src/compose/index.ts";
import type { BusUser } from "../../src/compose/types.ts";
import { openCatalogue } from "../../src/records/catalogue.ts";
import { serveCommands } from "../../src/commands/server.ts";
import { sendCommand } from "../../src/client/send.ts";
import { hashPassword, newMeshKey, newNodeKeyPair, newPassword, newUserKey, openWithMeshKey, sealWithMeshKey } from "../../src/crypto/secrets.ts";
import { CONTROLLER_NAME } from "../../src/names.ts";
import { makeBusCertificate } from "../../installer/tls.ts";
import { startNatsServer, type NatsServer } from "../../test/support/natsServer.ts";

/** The operator the bench sends its commands as (R51: the subject names the asker). */
const OPERATOR = "operator-bench";
/** Dials opened at once while connecting the fleet. */
const CONCURRENCY = 64;
/** How long after a change is live the others are still watched for a drop. */
const SETTLE_MS = 2_000;

/** One side's figures at one size (milliseconds unless named otherwise). */
export type FleetSide = {
  /** `nkey` or `bcrypt`: what the composed list holds (raw uses the same kind). */
  kind: string;
  connectMs: number;
  /** First dials that failed and were tried again (a TLS handshake past the server's timeout under load). */
  connectRetries: number;
  /** From the list's composition (raw: its write) until the changed principal's new key is admitted. */
  toLiveMs: number;
  /** SIGHUP until `/varz` `config_load_time` moved. */
  reloadMs: number;
  /** The changed principal's old key refused after the change (it must be). */
  oldKeyRefused: boolean;
  /** Others dropped by the reload (must be 0). */
  droppedByReload: number;
  /** From the restart (after kill -9) until every connection was back. */
  stormMs: number | null;
  /** Connections not back within the storm's bound. */
  stormLost: number;
  /** Authorization errors and timeouts in the server's log during the storm. */
  stormAuthFailures: number;
  /** Most reconnects seen in one second of the storm. */
  stormPeakPerSecond: number;
  /** Of the connections not back, how many the client had closed (gave up) rather than still trying. */
  stormClosed: number;
  /** The first authorization lines of the server's log during the storm (what the failures were). */
  stormAuthSample: string[];
};

/** A side that could not be measured: why (the other side's figures are kept). */
export type FleetFailure = { failed: string };
export type FleetRow = { size: number; mesh: FleetSide; raw: FleetSide | FleetFailure };

/** A fleet connection and what its status stream said. */
type Watched = { nc: NatsConnection; disconnects: number; reconnects: number; lastReconnectAt: number; closed: boolean };

function watch(nc: NatsConnection): Watched {
  const watched: Watched = { nc, disconnects: 0, reconnects: 0, lastReconnectAt: 0, closed: false };
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === "disconnect") watched.disconnects += 1;
      else if (status.type === "reconnect") {
        watched.reconnects += 1;
        watched.lastReconnectAt = performance.now();
      }
    }
  })().catch(() => undefined);
  void nc.closed().then(() => { watched.closed = true; });
  return watched;
}

/**
 * Dials once more after a failure, up to 5 attempts: on a loaded machine a TLS handshake can pass
 * the server's 5 s timeout. Each retry is counted in `retries.count` (reported beside the time).
 */
async function dialWithRetries<T>(dial: () => Promise<T>, retries: { count: number }): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await dial();
    } catch (error) {
      if (attempt >= 5) throw error;
      retries.count += 1;
      await sleep(200 * attempt);
    }
  }
}

/** Runs `dial(i)` for i in [0, count) with at most `CONCURRENCY` in flight; results in order. */
async function bounded<T>(count: number, dial: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array<T>(count);
  let next = 0;
  const worker = async () => {
    for (;;) {
      const i = next;
      next += 1;
      if (i >= count) return;
      out[i] = await dial(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, count) }, worker));
  return out;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A bus server with TLS and an include file for its users, restartable on the same port and store. */
type Bus = {
  server: NatsServer; dir: string; usersFile: string; pidFile: string; monitorUrl: string; certFile: string; fingerprint: string;
  restart(): Promise<void>;
  stop(): Promise<void>;
};

async function startBus(label: string, firstList: string): Promise<Bus> {
  const dir = mkdtempSync(join(tmpdir(), `mesh-bench-fleet-${label}-`));
  const tls = makeBusCertificate(dir, []);
  const usersFile = join(dir, "users.conf");
  const pidFile = join(dir, "server.pid");
  writeFileSync(usersFile, firstList, { mode: 0o600 });
  const config = [
    `tls { cert_file: "${tls.certFile}", key_file: "${tls.keyFile}", timeout: 5 }`,
    `pid_file: "${pidFile}"`,
    `max_connections: 65536`,
    `write_deadline: "10s"`,
    `include "users.conf"`,
  ].join("\n");
  let server = await startNatsServer({ dir, config });
  const bus: Bus = {
    server, dir, usersFile, pidFile, certFile: tls.certFile, fingerprint: tls.fingerprint,
    monitorUrl: `http://127.0.0.1:${server.monitorPort}`,
    async restart() {
      server = await startNatsServer({ dir, config, port: bus.server.port });
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

/** The admin users of both sides (the bench's own connections: all subjects), nkey users (R63) with their seeds. */
function admins(): { users: BusUser[]; passwords: Record<string, string> } {
  const all = { publish: { allow: [">"] }, subscribe: { allow: [">"] } };
  const keys = { "bench-admin": newUserKey(), [OPERATOR]: newUserKey() };
  return {
    passwords: Object.fromEntries(Object.entries(keys).map(([user, key]) => [user, key.seed])),
    users: Object.entries(keys).map(([user, key]) => ({
      user, nkey: key.publicKey, permissions: all, principal: { kind: "controller" as const, name: CONTROLLER_NAME },
    })),
  };
}

/** The list's kind: what the composed users hold (an nkey public key, or a bcrypt hash). */
function kindOf(users: readonly BusUser[]): string {
  return users.some((u) => "nkey" in u && typeof (u as { nkey?: unknown }).nkey === "string") ? "nkey" : "bcrypt";
}

/** A hand-written user list: each user's key alone, no permissions (the raw baseline). */
function rawList(entries: ReadonlyArray<{ user: string; key: string }>): string {
  const lines = entries.map((e) => (/^U[A-Z2-7]{55}$/.test(e.key) ? `    {nkey: "${e.key}"}` : `    {user: "${e.user}", password: "${e.key}"}`));
  return ["authorization {", "  users = [", ...lines, "  ]", "}", ""].join("\n");
}

/** The key a composed user holds in the list: its nkey public key, or its bcrypt hash. */
function keyOf(user: BusUser): string {
  const nkey = (user as { nkey?: unknown }).nkey;
  return typeof nkey === "string" ? nkey : (user as { password?: string }).password ?? "";
}

/** Sends SIGHUP to the bus and waits for `/varz` `config_load_time` to move; returns the milliseconds. */
async function reloadByHand(bus: Bus): Promise<number> {
  const before = await configLoadTime(bus.monitorUrl);
  const t = performance.now();
  process.kill(Number(readFileSync(bus.pidFile, "utf8").trim()), "SIGHUP");
  while ((await configLoadTime(bus.monitorUrl).catch(() => before)) === before) await sleep(10);
  return performance.now() - t;
}

/** Dials once until admitted (a reload may still be under way); returns when it was. */
async function admitted(dial: () => Promise<NatsConnection>, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    try {
      const nc = await dial();
      await nc.close();
      return;
    } catch (error) {
      if (performance.now() > deadline) throw error;
      await sleep(20);
    }
  }
}

async function refused(dial: () => Promise<NatsConnection>): Promise<boolean> {
  try {
    const nc = await dial();
    await nc.close();
    return false;
  } catch {
    return true;
  }
}

/** kill -9, restart on the same port and store, and wait (bounded) for every connection to be back. */
async function storm(bus: Bus, fleet: readonly Watched[], boundMs: number): Promise<Pick<FleetSide, "stormMs" | "stormLost" | "stormAuthFailures" | "stormPeakPerSecond" | "stormClosed" | "stormAuthSample">> {
  const before = fleet.map((w) => w.reconnects);
  const lost = fleet.map((w) => w.disconnects);
  const logFile = join(bus.dir, "server.log");
  await bus.server.kill();
  const logBefore = readFileSync(logFile, "utf8").length;
  // Every client has noticed the loss before the restart (the raw and the mesh side alike).
  const noticed = performance.now() + 10_000;
  while (fleet.some((w, i) => w.disconnects === lost[i] && !w.closed) && performance.now() < noticed) await sleep(20);
  const t = performance.now();
  await bus.restart();
  const back = () => fleet.filter((w, i) => w.reconnects > before[i]!).length;
  const deadline = t + boundMs;
  while (back() < fleet.length && performance.now() < deadline && !fleet.every((w, i) => w.closed || w.reconnects > before[i]!)) await sleep(50);
  const count = back();
  const last = Math.max(...fleet.map((w, i) => (w.reconnects > before[i]! ? w.lastReconnectAt : 0)));
  const buckets = new Map<number, number>();
  for (const [i, w] of fleet.entries()) {
    if (w.reconnects <= before[i]!) continue;
    const second = Math.floor((w.lastReconnectAt - t) / 1000);
    buckets.set(second, (buckets.get(second) ?? 0) + 1);
  }
  const log = readFileSync(logFile, "utf8").slice(logBefore);
  const authLines = log.split("\n").filter((line) => /authoriz|authentication timeout|TLS handshake (error|timeout)/i.test(line));
  return {
    stormMs: count === fleet.length ? Math.round(last - t) : null,
    stormLost: fleet.length - count,
    stormAuthFailures: authLines.length,
    stormPeakPerSecond: Math.max(0, ...buckets.values()),
    stormClosed: fleet.filter((w, i) => w.closed && w.reconnects <= before[i]!).length,
    // The log line without its time and client address: what kind of failure it was.
    stormAuthSample: [...new Set(authLines.map((line) => line.replace(/^.*?\[(?:ERR|WRN|INF|DBG|TRC)\] /, "").replace(/ - cid:\d+/g, "").replace(/\d+\.\d+\.\d+\.\d+:\d+/g, "<address>")))].slice(0, 3),
  };
}

/** One side's measures once its fleet is connected (see the module comment). */
async function measureSide(
  kind: string, connectMs: number, connectRetries: number, bus: Bus, fleet: Watched[], changed: number,
  change: () => Promise<() => Promise<{ reloadMs: number; dialNew: () => Promise<NatsConnection>; dialOld: () => Promise<NatsConnection> }>>,
  stormBoundMs: number,
): Promise<FleetSide> {
  const others = fleet.filter((_, i) => i !== changed);
  const dropsBefore = others.reduce((sum, w) => sum + w.disconnects, 0);
  const apply = await change(); // the change recorded (mesh) or made (raw): not timed
  const t = performance.now();
  const made = await apply();
  await admitted(made.dialNew, 60_000);
  const toLiveMs = performance.now() - t;
  await sleep(SETTLE_MS);
  const droppedByReload = others.reduce((sum, w) => sum + w.disconnects, 0) - dropsBefore;
  const oldKeyRefused = await refused(made.dialOld);
  const stormed = await storm(bus, others, stormBoundMs);
  return { kind, connectMs: Math.round(connectMs), connectRetries, toLiveMs: Math.round(toLiveMs), reloadMs: Math.round(made.reloadMs), oldKeyRefused, droppedByReload, ...stormed };
}

/** The mesh side at `size` nodes; returns its figures and what the raw side reuses (keys, secrets). */
async function meshSide(size: number, stormBoundMs: number, log: (line: string) => void): Promise<{ side: FleetSide; users: BusUser[]; credentials: BusCredential[] }> {
  const admin = admins();
  const bus = await startBus("mesh", renderUserList({ users: admin.users }));
  const credentialsDir = join(bus.dir, "credentials");
  mkdirSync(credentialsDir, { mode: 0o700 });
  const address = `tls://127.0.0.1:${bus.server.port}`;
  const dialAdmin = (user: string) => connectToBus({ address, user, seed: admin.passwords[user]!, fingerprint: bus.fingerprint }, { name: user });
  const controllerNc = await dialAdmin("bench-admin");
  const operatorNc = await dialAdmin(OPERATOR);
  const fleet: Watched[] = [];
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
    let t = performance.now();
    const privateKeys: string[] = [];
    const seeds: string[] = [];
    const files = await bounded(size, async (i) => {
      const node = `n${i}`;
      // Its keys are generated here, as its host would (R64): the reply carries none.
      const keys = newNodeKeyPair();
      const user = newUserKey();
      privateKeys[i] = keys.privateKey;
      seeds[i] = user.seed;
      const reply = await sendCommand(operatorNc, OPERATOR, "node.enrol", { node, publicKey: keys.publicKey, nkey: user.publicKey }, { timeoutMs: 60_000 });
      if (!reply.ok) throw new Error(`node.enrol ${node} refused: ${reply.error.code}`);
      const file = join(credentialsDir, `${node}.json`);
      writeBusCredential(file, credentialFrom(reply, () => ({ current: user.seed, pending: undefined })));
      return file;
    });
    log(`  mesh: ${size} nodes enrolled in ${Math.round(performance.now() - t)} ms`);
    const compose = { controllerSubmits: [] as string[] };
    const composeList = () => {
      const composed = composeBusUsers(catalogue.state, compose);
      if (!composed.ok) throw new Error(`the user list is refused: ${composed.refusal.code}`);
      return composed.users;
    };
    const reload = { includeFile: bus.usersFile, configFile: bus.server.configFile, pid: bus.pidFile, monitorUrl: bus.monitorUrl, reloadTimeoutMs: 300_000 };
    const users = composeList();
    await installUserList(renderUserList({ users: [...admin.users, ...users] }), reload);
    const kind = kindOf(users);

    const credentials = files.map((file) => readBusCredential(file));
    // As a host agent dials (host/agent.ts): its current secret read at every reconnect, so an
    // authorization error (a timeout in a storm, a list not yet reloaded) does not end reconnecting.
    // Its 5 s dial timeout too (the host's default): it bounds every reconnect attempt, and a
    // storm's attempt whose TLS handshake the server dropped waits that long before the next.
    const agentOptions = (i: number) => ({ name: `n${i}`, timeoutMs: 5_000, secret: () => secretOf(credentials[i]!) });
    t = performance.now();
    const retries = { count: 0 };
    fleet.push(...(await bounded(size, async (i) => watch(await dialWithRetries(() => connectToBus(credentials[i]!, agentOptions(i)), retries)))));
    const connectMs = performance.now() - t;
    log(`  mesh: ${size} connected (${kind}) in ${Math.round(connectMs)} ms, ${retries.count} dials retried`);

    const changed = Math.floor(size / 2);
    const node = `n${changed}`;
    const side = await measureSide(kind, connectMs, retries.count, bus, fleet, changed, async () => {
      // The change is recorded first (a rotation, R48); the push's half is timed from composition on.
      const next = newUserKey(); // made on the node (mesh host rotate-key, R64)
      const reply = await sendCommand(operatorNc, OPERATOR, "credential.rotate", { kind: "node", name: node, nkey: next.publicKey }, { timeoutMs: 60_000 });
      if (!reply.ok) throw new Error(`credential.rotate ${node} refused: ${reply.error.code}`);
      const file = join(credentialsDir, `${node}.json`);
      const old = readBusCredential(file);
      writeBusCredential(file, credentialFrom(reply, () => ({ current: seeds[changed], pending: next.seed })));
      await catalogue.catchUp();
      return async () => {
        const installed = await installUserList(renderUserList({ users: [...admin.users, ...composeList()] }), reload);
        return {
          reloadMs: installed.reloadMs ?? Number.NaN,
          dialNew: () => connectToBus(readBusCredential(file), { reconnect: false }),
          dialOld: () => connectToBus(old, { reconnect: false }),
        };
      };
    }, stormBoundMs);
    await commands.stop();
    return { side, users, credentials };
  } finally {
    await Promise.all(fleet.map((w) => w.nc.close().catch(() => undefined)));
    await controllerNc.close().catch(() => undefined);
    await operatorNc.close().catch(() => undefined);
    await bus.stop();
  }
}

/** The raw side: the same keys by hand, plain nats.js clients, SIGHUP by hand. */
async function rawSide(users: readonly BusUser[], credentials: readonly BusCredential[], kind: string, stormBoundMs: number, log: (line: string) => void): Promise<FleetSide> {
  const byUser = new Map(users.map((u) => [u.user, keyOf(u)]));
  const entries = credentials.map((c) => ({ user: c.user, key: byUser.get(c.user) ?? "" }));
  const bus = await startBus("raw", rawList(entries));
  const fleet: Watched[] = [];
  const pem = readFileSync(bus.certFile, "utf8");
  const dial = (credential: BusCredential, reconnect = true) => {
    const secret = secretOf(credential);
    // An nkey signs natively, as nats.go does (nats.js's nkeyAuthenticator signs in JavaScript, ~35x slower: see nkeySigner.ts).
    const signer = isSeed(secret) ? nkeySigner(secret) : undefined;
    const auth = signer ? { authenticator: (nonce?: string) => ({ nkey: signer.publicKey, sig: nonce ? signer.sign(nonce) : "" }) } : { user: credential.user, pass: secret };
    // Reconnecting through authorization errors, as the mesh's agents do (ignoreAuthErrorAbort).
    return connect({ servers: `127.0.0.1:${bus.server.port}`, tls: { ca: pem }, ...auth, timeout: 5_000, reconnect, maxReconnectAttempts: reconnect ? -1 : 0, ignoreAuthErrorAbort: reconnect });
  };
  try {
    const t = performance.now();
    const retries = { count: 0 };
    fleet.push(...(await bounded(credentials.length, async (i) => watch(await dialWithRetries(() => dial(credentials[i]!), retries)))));
    const connectMs = performance.now() - t;
    log(`  raw: ${credentials.length} connected in ${Math.round(connectMs)} ms, ${retries.count} dials retried`);
    const changed = Math.floor(credentials.length / 2);
    return await measureSide(kind, connectMs, retries.count, bus, fleet, changed, async () => {
      // A fresh key of the same kind for the changed user, written by hand.
      const old = credentials[changed]!;
      let fresh: BusCredential;
      if (isSeed(secretOf(old))) {
        const pair = createUser();
        fresh = withSecret(old, new TextDecoder().decode(pair.getSeed()));
        entries[changed] = { user: old.user, key: pair.getPublicKey() };
      } else {
        const password = newPassword();
        fresh = withSecret(old, password);
        entries[changed] = { user: old.user, key: hashPassword(password) };
      }
      return async () => {
        writeFileSync(bus.usersFile, rawList(entries));
        const reloadMs = await reloadByHand(bus);
        return { reloadMs, dialNew: () => dial(fresh, false), dialOld: () => dial(old, false) };
      };
    }, stormBoundMs);
  } finally {
    await Promise.all(fleet.map((w) => w.nc.close().catch(() => undefined)));
    await bus.stop();
  }
}

/** Both sides at `size` (mesh first, then raw with the same keys). */
export async function measureFleet(size: number, log: (line: string) => void = (line) => console.error(line)): Promise<FleetRow> {
  const limit = Number(execFileSync("sh", ["-c", "ulimit -n"], { encoding: "utf8" }).trim());
  if (Number.isFinite(limit) && limit < size + 500) {
    throw new Error(`ulimit -n is ${limit}: ${size} connections need at least ${size + 500} (the server and this process each hold one socket per connection, and inherit this limit); raise it (ulimit -n ${2 * size}) and run again`);
  }
  const stormBoundMs = Math.max(60_000, size * 10);
  log(`fleet ${size}: mesh side`);
  const mesh = await meshSide(size, stormBoundMs, log);
  log(`fleet ${size}: mesh ${JSON.stringify(mesh.side)}`);
  log(`fleet ${size}: raw side (${mesh.side.kind})`);
  let raw: FleetSide | FleetFailure;
  try {
    raw = await rawSide(mesh.users, mesh.credentials, mesh.side.kind, stormBoundMs, log);
    log(`fleet ${size}: raw ${JSON.stringify(raw)}`);
  } catch (error) {
    raw = { failed: error instanceof Error ? error.message.split("\n")[0]! : String(error) };
  }
  return { size, mesh: mesh.side, raw };
}

/** `--fleet 1000,10000` (default 1000); `--json` prints the rows as JSON. */
export async function run(args: string[]): Promise<void> {
  const given = args.includes("--fleet") ? args[args.indexOf("--fleet") + 1] : undefined;
  const sizes = (given ?? "1000").split(",").map(Number).filter((n) => Number.isInteger(n) && n > 1);
  const rows: FleetRow[] = [];
  for (const size of sizes) rows.push(await measureFleet(size));
  console.log(JSON.stringify(rows, null, 2));
}
