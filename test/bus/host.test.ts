import { describe, it, before, beforeEach, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, nkeyAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import { AckPolicy, jetstream, jetstreamManager, RetentionPolicy, StorageType, type JetStreamManager } from "@nats-io/jetstream";
import { startNatsServer, waitFor, type NatsServer } from "../support/natsServer.ts";
import {
  CONTROL_STREAM, CONTROL_SUBJECTS, REPORTS_STREAM, busUser, declarationConsumer, declarationFilter, declarationSubject, inboxPrefix, reportSubject,
  userListPartSubject,
} from "../../src/names.ts";
import { splitUserList, userListPartHeaders } from "../../src/push/publish.ts";
import { newUserKey, publicKeyOfSeed, sealToNode } from "../../src/crypto/secrets.ts";
import { canonicalJson, moduleEnvironment, permissionsOf, renderUserList, type BusUser, type Declaration } from "../../src/compose/index.ts";
import type { DeclarationBody } from "../../src/contracts/declaration.ts";
import { initialState } from "../../src/projections/state.ts";
import { reportsStreamSpec } from "../../src/controller/planRaise.ts";
import { initHostKeys, lastGoodFile, startHost, type Host } from "../../src/host/index.ts";
import type { HostReport } from "../../src/contracts/report.ts";
import { keysOfListText, usersOfListText } from "../../src/host/declaration.ts";

/**
 * The host agent against real nats-servers (DESIGN.md section 7): a node user whose permissions are
 * exactly its composed grants (permissionsOf) binds the consumer the admin raised, applies
 * hand-made declarations (secrets sealed to the node's key) and reports them; the broker's holder
 * installs the user list and the bus reloads it.
 */

const CONFIG = { controllerSubmits: [] as string[] };
const minted: string[] = [];
/** A fresh secret (R63: an nkey seed; provisions take it as any secret), remembered for the R3 check. */
function mint(): string {
  const { seed } = newUserKey();
  minted.push(seed);
  return seed;
}
const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

function nodeUser(node: string, password: string): BusUser {
  const principal = { kind: "node" as const, name: node };
  return { user: busUser("node", node), nkey: publicKeyOfSeed(password), permissions: permissionsOf(initialState, principal, CONFIG), principal };
}
function adminUser(password: string): BusUser {
  return {
    user: "admin",
    nkey: publicKeyOfSeed(password),
    permissions: { publish: { allow: [">"] }, subscribe: { allow: [">"] } },
    principal: { kind: "controller", name: "mesh-controller" },
  };
}

type ModuleSpec = { module: string; password: string; provisions?: Array<{ seat: string; provision: string; password: string }> };

/** A declaration as the tests send it: `listText` (not sent) is the user list its `userList` names. */
type TestDeclaration = Declaration & { listText?: string };

/** A declaration as compose shapes it, with every secret sealed to the node's key as push sends it. */
function declaration(
  node: string,
  publicKey: string,
  modules: ModuleSpec[],
  extra: { userList?: string; grants?: Array<{ seat: string; provision: string; consumer: string; password: string }> } = {},
): TestDeclaration {
  const body: DeclarationBody = {
    v: 1,
    node,
    modules: modules.map((m) => ({
      module: m.module,
      version: "1.0.0",
      run: { image: `example/${m.module}:1` },
      credential: { address: "nats://127.0.0.1:4222", user: busUser("module", m.module), sealed: sealToNode(publicKey, m.password), fingerprint: "" },
      env: moduleEnvironment(initialState, m.module, "nats://127.0.0.1:4222", busUser("module", m.module), ""),
      provisions: (m.provisions ?? []).map((p) => ({ seat: p.seat, provision: p.provision, user: `${m.module}-${p.provision}`, sealed: sealToNode(publicKey, p.password) })),
    })),
    provisions: (extra.grants ?? []).map((g) => ({
      seat: g.seat, provision: g.provision, consumer: g.consumer, user: `${g.consumer}-${g.provision}`, sealed: sealToNode(publicKey, g.password),
    })),
    ...(extra.userList !== undefined
      ? { userList: { digest: sha256(extra.userList), bytes: Buffer.byteLength(extra.userList), parts: splitUserList(extra.userList).length } }
      : {}),
  };
  return { ...body, digest: sha256(canonicalJson(body)), ...(extra.userList !== undefined ? { listText: extra.userList } : {}) };
}

/** The streams a host uses, as a mesh has them: CONTROL (its declarations) and REPORTS (its reports). */
async function raiseControl(jsm: JetStreamManager): Promise<void> {
  await jsm.streams.add({ name: CONTROL_STREAM, subjects: [CONTROL_SUBJECTS], max_msgs_per_subject: 1, retention: RetentionPolicy.Limits });
  await jsm.streams.add({ ...reportsStreamSpec(1), retention: RetentionPolicy.Limits, storage: StorageType.File });
}
async function raiseConsumer(jsm: JetStreamManager, node: string): Promise<void> {
  await jsm.consumers.add(CONTROL_STREAM, {
    durable_name: declarationConsumer(node),
    filter_subject: declarationFilter(node),
    ack_policy: AckPolicy.Explicit,
  });
}

type Running = { host: Host; lines: string[]; stateDir: string; publicKey: string; password: string; node: string };

function prepareNode(root: string, node: string): { stateDir: string; publicKey: string; password: string } {
  const stateDir = join(root, node);
  const { publicKey } = initHostKeys(stateDir);
  return { stateDir, publicKey, password: mint() };
}

function runHost(server: NatsServer, node: string, prepared: { stateDir: string; publicKey: string; password: string }, bus?: Parameters<typeof startHost>[0]["bus"]): Running {
  const lines: string[] = [];
  const host = startHost({
    stateDir: prepared.stateDir,
    node,
    credential: { address: server.url, user: busUser("node", node), seed: prepared.password },
    log: (line) => lines.push(line),
    backoff: { initialMs: 50, maxMs: 400 },
    // R72: these declarations' images are not run here (no container runtime is looked for).
    runner: { onPath: () => false },
    ...(bus ? { bus } : {}),
  });
  return { host, lines, node, ...prepared };
}

/**
 * Publishes a declaration as push does: its user list's parts first (push's own splitter and
 * headers), then the declaration. `skipParts` leaves those part indexes out (a lost part).
 */
async function publishDeclaration(admin: NatsConnection, d: TestDeclaration, skipParts: readonly number[] = []): Promise<void> {
  const js = jetstream(admin);
  const { listText, ...wire } = d;
  if (listText !== undefined && wire.userList) {
    const parts = splitUserList(listText);
    await Promise.all(parts.flatMap((part, index) => skipParts.includes(index)
      ? []
      : [js.publish(userListPartSubject(d.node, index), part, { headers: userListPartHeaders(wire.userList!.digest, index, parts.length) })]));
  }
  await js.publish(declarationSubject(d.node), JSON.stringify(wire));
}

/** Publishes one part of a declaration's user list (a part that arrives late). */
async function publishPart(admin: NatsConnection, d: TestDeclaration, index: number): Promise<void> {
  const parts = splitUserList(d.listText!);
  await jetstream(admin).publish(userListPartSubject(d.node, index), parts[index]!, { headers: userListPartHeaders(d.userList!.digest, index, parts.length) });
}

/**
 * `count` generated node users, each an nkey user of its own (the bus refuses a key listed twice)
 * with a node's composed grants: ~450 bytes each.
 */
function generatedUsers(count: number, prefix: string): BusUser[] {
  return Array.from({ length: count }, (_, i) => {
    const principal = { kind: "node" as const, name: `${prefix}${i}` };
    return { user: busUser("node", principal.name), nkey: newUserKey().publicKey, permissions: permissionsOf(initialState, principal, CONFIG), principal };
  });
}

/** A report without its modules' run states (R72, pinned by test/bus/runner.test.ts). */
function withoutRuns(report: HostReport): HostReport {
  const { modules: _modules, ...rest } = report;
  return rest;
}

/**
 * Compares a report naming thousands of users without node's deep diff (minutes on lists this
 * size when they differ): the serialized forms, and on a mismatch the first differing field.
 */
function sameReport(withRuns: HostReport, expected: HostReport): void {
  const actual = withoutRuns(withRuns);
  if (JSON.stringify(actual) === JSON.stringify(expected)) return;
  const fields = [...new Set([...Object.keys(actual), ...Object.keys(expected)])];
  const differing = fields.filter((f) => JSON.stringify((actual as Record<string, unknown>)[f]) !== JSON.stringify((expected as Record<string, unknown>)[f]));
  assert.fail(`the report differs in ${differing.join(", ")}: ${JSON.stringify(actual).slice(0, 300)}`);
}

async function canConnect(server: NatsServer, user: string, pass: string): Promise<boolean> {
  try {
    const nc = await connect({ servers: server.url, authenticator: nkeyAuthenticator(new TextEncoder().encode(pass)), inboxPrefix: inboxPrefix(user), reconnect: false, timeout: 3_000 });
    await nc.close();
    return true;
  } catch {
    return false;
  }
}

function assertNoPassword(lines: readonly string[]): void {
  for (const line of lines) for (const password of minted) assert.ok(!line.includes(password), `a log line holds a minted password: ${line.slice(0, 60)}...`);
}

describe("host agent: applying declarations", () => {
  let server: NatsServer;
  let admin: NatsConnection;
  let root: string;
  let alpha: Running;
  const adminPassword = mint();

  before(async () => {
    root = mkdtempSync(join(tmpdir(), "mesh-host-"));
    const prepared = prepareNode(root, "alpha");
    const late = prepareNode(root, "late");
    writeFileSync(join(root, "late.password"), late.password);
    const users = renderUserList({ users: [adminUser(adminPassword), nodeUser("alpha", prepared.password), nodeUser("late", late.password)] });
    server = await startNatsServer({ files: { "users.conf": users }, config: `include "users.conf"` });
    admin = await connect({ servers: server.url, authenticator: nkeyAuthenticator(new TextEncoder().encode(adminPassword)) });
    const jsm = await jetstreamManager(admin);
    await raiseControl(jsm);
    await raiseConsumer(jsm, "alpha");
    alpha = runHost(server, "alpha", prepared);
  });
  after(async () => {
    await alpha?.host.stop();
    await admin?.close();
    await server?.stop();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  /** The first test's kind of declaration for alpha: web (a provision on mesh-store and a grant of it) and cache, fresh secrets. */
  const webAndCache = () => declaration("alpha", alpha.publicKey, [
    { module: "web", password: mint(), provisions: [{ seat: "mesh-store", provision: "database", password: mint() }] },
    { module: "cache", password: mint() },
  ], { grants: [{ seat: "mesh-store", provision: "database", consumer: "web", password: mint() }] });

  /** Publishes `d` and returns alpha's report of it. */
  async function applied(d: TestDeclaration): Promise<HostReport> {
    await publishDeclaration(admin, d);
    return alpha.host.waitForReport(d.digest);
  }

  /** Files the host found in the mesh's folders (the operator's own): a note beside a module's files, a folder of its own. */
  function placeFoundFiles(): { found: string; foundElsewhere: string } {
    const found = join(alpha.stateDir, "modules", "cache", "operator-notes.txt");
    writeFileSync(found, "kept by the host\n");
    const foundElsewhere = join(alpha.stateDir, "modules", "hand-made", "thing.conf");
    mkdirSync(join(alpha.stateDir, "modules", "hand-made"), { recursive: true });
    writeFileSync(foundElsewhere, "x\n");
    return { found, foundElsewhere };
  }

  it("R29: writes the resources a declaration names, secrets opened 0600, and reports its digest", async () => {
    const web = mint();
    const db = mint();
    const grant = mint();
    const d = declaration("alpha", alpha.publicKey, [
      { module: "web", password: web, provisions: [{ seat: "mesh-store", provision: "database", password: db }] },
      { module: "cache", password: mint() },
    ], { grants: [{ seat: "mesh-store", provision: "database", consumer: "web", password: grant }] });
    const reports: HostReport[] = [];
    const sub = admin.subscribe(reportSubject("alpha"), { callback: (_e, m) => { reports.push(m.json<HostReport>()); } });
    await admin.flush();
    await publishDeclaration(admin, d);
    const report = await alpha.host.waitForReport(d.digest);
    assert.deepEqual(withoutRuns(report), { node: "alpha", digest: d.digest, ok: true });
    assert.deepEqual(report.modules?.map((m) => [m.module, m.state]), [["cache", "runtime-missing"], ["web", "runtime-missing"]], "R72: no runtime here");
    await waitFor(() => reports.find((r) => r.digest === d.digest), { name: "report on the bus" });
    sub.unsubscribe();

    const dir = join(alpha.stateDir, "modules", "web");
    const credential = JSON.parse(readFileSync(join(dir, "credential.json"), "utf8"));
    assert.equal(credential.seed, web, "the module's nkey seed (R63)");
    assert.equal(credential.password, undefined);
    assert.equal(credential.user, busUser("module", "web"));
    assert.equal(credential.fingerprint, undefined, "an empty fingerprint (nats://) is left out");
    assert.equal(statSync(join(dir, "credential.json")).mode & 0o777, 0o600);
    assert.match(readFileSync(join(dir, "env"), "utf8"), new RegExp(`^MESH_NKEY_SEED='${web}'$`, "m"));
    assert.equal(statSync(join(dir, "env")).mode & 0o777, 0o600);
    assert.equal(JSON.parse(readFileSync(join(dir, "module.json"), "utf8")).run.image, "example/web:1");
    assert.equal(JSON.parse(readFileSync(join(dir, "provisions.json"), "utf8"))[0].secret, db);
    assert.equal(JSON.parse(readFileSync(join(alpha.stateDir, "provisions", "mesh-store", "database", "web.json"), "utf8")).secret, grant);
    assert.ok(existsSync(join(alpha.stateDir, "modules", "cache", "credential.json")));
  });

  it("R29: an unassigned module's resources are removed, a file the host found is kept", async () => {
    assert.equal((await applied(webAndCache())).ok, true);
    assert.ok(existsSync(join(alpha.stateDir, "modules", "cache", "credential.json")) && existsSync(join(alpha.stateDir, "modules", "web", "provisions.json")));
    const { found, foundElsewhere } = placeFoundFiles();
    const d = declaration("alpha", alpha.publicKey, [{ module: "web", password: mint() }]);
    await publishDeclaration(admin, d);
    assert.equal((await alpha.host.waitForReport(d.digest)).ok, true);
    assert.ok(!existsSync(join(alpha.stateDir, "modules", "cache", "credential.json")), "the unassigned module's credential is removed");
    assert.ok(!existsSync(join(alpha.stateDir, "modules", "cache", "module.json")));
    assert.ok(!existsSync(join(alpha.stateDir, "provisions", "mesh-store")), "a grant no longer declared is removed with its empty folders");
    assert.equal(readFileSync(found, "utf8"), "kept by the host\n");
    assert.ok(existsSync(foundElsewhere));
    assert.ok(!existsSync(join(alpha.stateDir, "modules", "web", "provisions.json")), "a provision no longer received is removed");
    assert.ok(existsSync(join(alpha.stateDir, "modules", "web", "credential.json")));
  });

  it("R29: an empty declaration is applied: everything the mesh owned goes, found files stay", async () => {
    assert.equal((await applied(webAndCache())).ok, true);
    placeFoundFiles();
    const d = declaration("alpha", alpha.publicKey, []);
    await publishDeclaration(admin, d);
    assert.equal((await alpha.host.waitForReport(d.digest)).ok, true);
    assert.ok(!existsSync(join(alpha.stateDir, "modules", "web")), "the mesh's module folder is gone");
    assert.ok(existsSync(join(alpha.stateDir, "modules", "cache", "operator-notes.txt")));
    assert.ok(existsSync(join(alpha.stateDir, "modules", "hand-made", "thing.conf")));
    const owned = JSON.parse(readFileSync(join(alpha.stateDir, "owned.json"), "utf8"));
    assert.deepEqual(owned.files, []);
    assert.equal(owned.digest, d.digest);
  });

  it("R29: a declaration whose secret was sealed to another key is reported ok:false and writes nothing", async () => {
    const other = prepareNode(root, "other");
    const d = declaration("alpha", other.publicKey, [{ module: "web", password: mint() }]);
    await publishDeclaration(admin, d);
    const report = await alpha.host.waitForReport(d.digest);
    assert.equal(report.ok, false);
    assert.ok(!existsSync(join(alpha.stateDir, "modules", "web")), "nothing is written when a secret does not open");
  });

  it("R69 (issue 25): a declaration that fails changes nothing: not its credential's pin, not its files, not what it re-checks", async () => {
    assert.equal((await applied(webAndCache())).ok, true);
    const lastApplied = readFileSync(join(alpha.stateDir, "last-applied.json"), "utf8");
    const owned = readFileSync(join(alpha.stateDir, "owned.json"), "utf8");
    const credentialFile = join(alpha.stateDir, "credential.json");
    const pinned = existsSync(credentialFile) ? readFileSync(credentialFile, "utf8") : undefined;
    // its own credential with another pin, and a module whose secret does not open here
    const self = { address: server.url, user: busUser("node", "alpha"), nkey: publicKeyOfSeed(alpha.password), fingerprint: Array.from({ length: 32 }, () => "AB").join(":") };
    const d = { ...declaration("alpha", prepareNode(root, "elsewhere").publicKey, [{ module: "web", password: mint() }]), self };
    const report = await applied(d);
    assert.equal(report.ok, false);
    assert.equal(existsSync(credentialFile) ? readFileSync(credentialFile, "utf8") : undefined, pinned, "the credential (its pin) is as it was");
    assert.equal(readFileSync(join(alpha.stateDir, "last-applied.json"), "utf8"), lastApplied, "what it re-checks is the last declaration applied");
    assert.equal(readFileSync(join(alpha.stateDir, "owned.json"), "utf8"), owned);
    assert.deepEqual(readdirSync(alpha.stateDir).filter((name) => name.startsWith(".")), [], "nothing staged is left");
    assert.equal((await applied(webAndCache())).ok, true, "the real bus still reaches it");
  });

  it("R22: a node whose consumer is not raised yet retries, binds once it is, and never creates it", async () => {
    const late = { stateDir: join(root, "late"), publicKey: readFileSync(join(root, "late", "node.pub"), "utf8").trim(), password: readFileSync(join(root, "late.password"), "utf8") };
    const running = runHost(server, "late", late);
    try {
      await waitFor(() => running.lines.filter((l) => l.includes("failed")).length >= 2, { name: "two failed binds", timeoutMs: 10_000 });
      const jsm = await jetstreamManager(admin);
      await assert.rejects(jsm.consumers.info(CONTROL_STREAM, declarationConsumer("late")), "the host did not create its consumer");
      await raiseConsumer(jsm, "late");
      const d = declaration("late", late.publicKey, [{ module: "solo", password: mint() }]);
      await publishDeclaration(admin, d);
      assert.equal((await running.host.waitForReport(d.digest)).ok, true);
      assertNoPassword(running.lines);
    } finally {
      await running.host.stop();
    }
  });

  it("R3: no log line of the host holds a password", async () => {
    // Something to log: a declaration applied and one refused (its secret sealed to another key).
    assert.equal((await applied(webAndCache())).ok, true);
    assert.equal((await applied(declaration("alpha", prepareNode(root, "stranger").publicKey, [{ module: "web", password: mint() }]))).ok, false);
    assert.ok(alpha.lines.length >= 4);
    assertNoPassword(alpha.lines);
  });
});

describe("host agent: the broker's user list", () => {
  let server: NatsServer;
  let admin: NatsConnection;
  let root: string;
  let dir: string;
  let broker: Running;
  const hosts: Running[] = [];
  const adminPassword = mint();
  let baseUsers: BusUser[];

  before(async () => {
    root = mkdtempSync(join(tmpdir(), "mesh-host-broker-"));
    dir = mkdtempSync(join(tmpdir(), "mesh-nats-broker-"));
    const prepared = prepareNode(root, "hub");
    baseUsers = [adminUser(adminPassword), nodeUser("hub", prepared.password)];
    server = await startNatsServer({
      dir,
      files: { "users.conf": renderUserList({ users: baseUsers }) },
      config: [`include "users.conf"`, `pid_file: "${join(dir, "server.pid")}"`].join("\n"),
    });
    admin = await connect({ servers: server.url, authenticator: nkeyAuthenticator(new TextEncoder().encode(adminPassword)) });
    const jsm = await jetstreamManager(admin);
    await raiseControl(jsm);
    await raiseConsumer(jsm, "hub");
    await raiseConsumer(jsm, "gamma");
    broker = runHost(server, "hub", prepared, {
      includeFile: join(dir, "users.conf"),
      configFile: server.configFile,
      pid: join(dir, "server.pid"),
      monitorUrl: `http://127.0.0.1:${server.monitorPort}`,
      reloadTimeoutMs: 10_000,
    });
    hosts.push(broker);
  });
  after(async () => {
    for (const running of hosts) await running.host.stop();
    await admin?.close();
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it("R11: the broker's holder writes the list, reloads the bus, and a new user can connect", async () => {
    const fresh = mint();
    assert.equal(await canConnect(server, "newcomer", fresh), false, "the new user is refused before the list carries it");
    const userList = renderUserList({ users: [...baseUsers, { ...adminUser(fresh), user: "newcomer" }] });
    const d = declaration("hub", broker.publicKey, [], { userList });
    await publishDeclaration(admin, d);
    const report = await broker.host.waitForReport(d.digest, 20_000);
    // R44: the broker's holder names the users of the list it installed.
    sameReport(report, { node: "hub", digest: d.digest, ok: true, users: usersOfListText(userList), keys: keysOfListText(userList) });
    assert.ok(report.users!.includes("newcomer"), "the report names the new user (from its line's comment, R63)");
    assert.equal(readFileSync(join(dir, "users.conf"), "utf8"), userList);
    assert.equal(readFileSync(lastGoodFile(join(dir, "users.conf")), "utf8"), userList);
    assert.equal(await canConnect(server, "newcomer", fresh), true, "the reloaded bus accepts the new user");
    assert.ok(broker.lines.some((l) => l.includes("user list reloaded")));
  });

  it("R11: an invalid list is refused, the last good file restored, and the bus keeps its users", async () => {
    const before = readFileSync(join(dir, "users.conf"), "utf8");
    const d = declaration("hub", broker.publicKey, [], { userList: "authorization { users = [ {user: " });
    await publishDeclaration(admin, d);
    const report = await broker.host.waitForReport(d.digest, 20_000);
    assert.equal(report.ok, false);
    assert.equal(readFileSync(join(dir, "users.conf"), "utf8"), before, "the last good file is back");
    assert.equal(await canConnect(server, "admin", adminPassword), true, "the bus still accepts the old users");
    // The bus itself was asked and refused the file as a whole (host/busList.ts): its log says so.
    assert.match(server.log(), /Failed to reload server configuration/);
    assert.match(report.error ?? "", /refused/);
  });

  it("R69 R50: a declaration whose list the bus refuses puts back the credential it took (its pin) and keeps what it re-checks", async () => {
    const credentialFile = join(broker.stateDir, "credential.json");
    const before = existsSync(credentialFile) ? readFileSync(credentialFile, "utf8") : undefined;
    const lastApplied = existsSync(join(broker.stateDir, "last-applied.json")) ? readFileSync(join(broker.stateDir, "last-applied.json"), "utf8") : undefined;
    const self = { address: server.url, user: busUser("node", "hub"), nkey: publicKeyOfSeed(broker.password), fingerprint: Array.from({ length: 32 }, () => "CD").join(":") };
    const d = { ...declaration("hub", broker.publicKey, [], { userList: "authorization { users = [ {nkey: " }), self };
    await publishDeclaration(admin, d);
    const report = await broker.host.waitForReport(d.digest, 20_000);
    assert.equal(report.ok, false);
    assert.ok(broker.lines.some((l) => l.includes("saved its credential")), `the credential was taken before the list, as R50 orders: ${report.error}`);
    assert.equal(existsSync(credentialFile) ? readFileSync(credentialFile, "utf8") : undefined, before, "and put back when the list failed");
    assert.equal(existsSync(join(broker.stateDir, "last-applied.json")) ? readFileSync(join(broker.stateDir, "last-applied.json"), "utf8") : undefined, lastApplied);
  });

  it("R11: a user list over the bus's 1 MiB message limit (5,000 users) arrives in parts, is installed, and a new user connects", async () => {
    const fresh = mint();
    const users = [...baseUsers, ...generatedUsers(5_000, "bulk"), { ...adminUser(fresh), user: "late-arrival" }];
    const userList = renderUserList({ users });
    assert.ok(Buffer.byteLength(userList) > 1024 * 1024, `the list is ${Buffer.byteLength(userList)} bytes`);
    const d = declaration("hub", broker.publicKey, [], { userList });
    assert.ok(d.userList!.parts >= 5, `${d.userList!.parts} parts`);
    assert.equal(await canConnect(server, "late-arrival", fresh), false);
    await publishDeclaration(admin, d);
    const report = await broker.host.waitForReport(d.digest, 60_000);
    sameReport(report, { node: "hub", digest: d.digest, ok: true, users: usersOfListText(userList), keys: keysOfListText(userList) });
    assert.equal(readFileSync(join(dir, "users.conf"), "utf8"), userList);
    assert.equal(await canConnect(server, "late-arrival", fresh), true, "the reloaded bus accepts a user from the list's last part");
    assert.deepEqual(readdirSync(join(broker.stateDir, "user-list-parts")), [], "the installed list's parts are dropped");
  });

  it("R11: a declaration whose parts are missing is reported ok:false naming them, and installed once they arrive", async () => {
    const fresh = mint();
    const userList = renderUserList({ users: [...baseUsers, ...generatedUsers(2_000, "partial"), { ...adminUser(fresh), user: "patient" }] });
    const d = declaration("hub", broker.publicKey, [], { userList });
    assert.ok(d.userList!.parts >= 3);
    await publishDeclaration(admin, d, [1]);
    const first = await broker.host.waitForReport(d.digest, 20_000);
    assert.equal(first.ok, false);
    assert.deepEqual(first.missingParts, [1]);
    assert.notEqual(readFileSync(join(dir, "users.conf"), "utf8"), userList, "nothing is installed from an incomplete list");
    assert.equal(await canConnect(server, "patient", fresh), false);
    await publishPart(admin, d, 1);
    const second = await waitFor(() => broker.host.reports.find((r) => r.digest === d.digest && r.ok), { name: "the completed list applied", timeoutMs: 20_000 });
    sameReport(second, { node: "hub", digest: d.digest, ok: true, users: usersOfListText(userList), keys: keysOfListText(userList) });
    assert.equal(readFileSync(join(dir, "users.conf"), "utf8"), userList);
    assert.equal(await canConnect(server, "patient", fresh), true);
  });

  it("R11: parts that do not join to the declared digest are refused and nothing is installed", async () => {
    const before = readFileSync(join(dir, "users.conf"), "utf8");
    const userList = renderUserList({ users: [...baseUsers, ...generatedUsers(10, "forged")] });
    const d = declaration("hub", broker.publicKey, [], { userList });
    const forged = { ...d, listText: userList.replace("node-forged0", "node-forged9") };
    await publishDeclaration(admin, forged);
    const report = await broker.host.waitForReport(d.digest, 20_000);
    assert.equal(report.ok, false);
    assert.equal(report.missingParts, undefined);
    assert.equal(readFileSync(join(dir, "users.conf"), "utf8"), before);
  });

  it("R1: a host whose credential is not in the list yet retries with backoff and connects once it is", async () => {
    const gamma = prepareNode(root, "gamma");
    const running = runHost(server, "gamma", gamma);
    hosts.push(running);
    await waitFor(() => running.lines.filter((l) => /attempt \d+ failed: .*Authorization/i.test(l)).length >= 2, {
      name: "two refused attempts",
      timeoutMs: 10_000,
    });
    assert.equal(running.host.bound(), false);
    const userList = renderUserList({ users: [...baseUsers, nodeUser("gamma", gamma.password)] });
    const list = declaration("hub", broker.publicKey, [], { userList });
    await publishDeclaration(admin, list);
    assert.equal((await broker.host.waitForReport(list.digest, 20_000)).ok, true);
    const d = declaration("gamma", gamma.publicKey, [{ module: "worker", password: mint() }]);
    await publishDeclaration(admin, d);
    assert.equal((await running.host.waitForReport(d.digest, 20_000)).ok, true);
    assert.ok(existsSync(join(gamma.stateDir, "modules", "worker", "credential.json")));
    const delays = running.lines.map((l) => /retrying in (\d+) ms/.exec(l)?.[1]).filter((x): x is string => x !== undefined).map(Number);
    assert.ok(delays.length >= 2 && delays[1]! > delays[0]!, `backoff grows: ${delays.join(", ")}`);
  });

  it("R3: no log line of any host holds a password", () => {
    for (const running of hosts) assertNoPassword(running.lines);
    assertNoPassword(server.log().split("\n"));
  });
});

describe("host agent: its reports reach the REPORTS stream (R32)", () => {
  let server: NatsServer;
  let admin: NatsConnection;
  let root: string;
  let alpha: Running;
  const adminPassword = mint();

  before(async () => {
    root = mkdtempSync(join(tmpdir(), "mesh-host-reports-"));
    const prepared = prepareNode(root, "alpha");
    const users = renderUserList({ users: [adminUser(adminPassword), nodeUser("alpha", prepared.password)] });
    server = await startNatsServer({ files: { "users.conf": users }, config: `include "users.conf"` });
    admin = await connect({ servers: server.url, authenticator: nkeyAuthenticator(new TextEncoder().encode(adminPassword)) });
    const jsm = await jetstreamManager(admin);
    await raiseControl(jsm);
    await raiseConsumer(jsm, "alpha");
    alpha = runHost(server, "alpha", prepared);
  });
  after(async () => {
    await alpha?.host.stop();
    await admin?.close();
    await server?.stop();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  // Each test starts without REPORTS: the bus cannot take a report until the test raises it.
  beforeEach(async () => {
    await (await jetstreamManager(admin)).streams.delete(REPORTS_STREAM).catch(() => undefined);
  });

  // Seen on a 2.9.10 cluster: after a server died and a user list was reloaded, the server a host
  // was on answered its report publishes "no responders" for over a minute (it had lost the
  // interest of the REPORTS stream's new leader on another server) while a fresh connection to
  // another server would have been answered.
  it("R32 R62: a host whose report JetStream did not take three times in a row dials the bus again, and the report is stored once the stream can take it", async () => {
    const d = declaration("alpha", alpha.publicKey, [{ module: "cache", password: mint() }]);
    const from = alpha.lines.length;
    await publishDeclaration(admin, d);
    assert.equal((await alpha.host.waitForReport(d.digest)).ok, true);
    await waitFor(() => alpha.lines.slice(from).some((l) => l.includes("dialling the bus again")), { timeoutMs: 15_000, name: "the host dialling again" });
    await waitFor(() => alpha.lines.slice(from).some((l) => l.includes("reconnected to the bus")), { timeoutMs: 15_000, name: "the host reconnected" });
    const jsm = await jetstreamManager(admin);
    await jsm.streams.add({ ...reportsStreamSpec(1), retention: RetentionPolicy.Limits, storage: StorageType.File });
    const stored = await waitFor(async () => {
      const last = await jsm.streams.getMessage(REPORTS_STREAM, { last_by_subj: reportSubject("alpha") }).catch(() => null);
      return last?.json<HostReport>().digest === d.digest ? last : undefined;
    }, { timeoutMs: 15_000, name: "alpha's report stored in REPORTS" });
    assert.equal(stored.json<HostReport>().ok, true);
    // The connection it dialled again still takes declarations.
    const next = declaration("alpha", alpha.publicKey, [{ module: "web", password: mint() }]);
    await publishDeclaration(admin, next);
    assert.equal((await alpha.host.waitForReport(next.digest)).ok, true);
  });

  // A report the bus did not store (the connection dropped under it as a reload removed the node's
  // old key, or JetStream could not take it for a moment) would leave a push waiting until it
  // times out: the host publishes it again until the REPORTS stream acknowledges it.
  it("R32: a report the REPORTS stream could not take when it was made is published again until the stream holds it", async () => {
    const d = declaration("alpha", alpha.publicKey, [{ module: "cache", password: mint() }]);
    await publishDeclaration(admin, d);
    assert.equal((await alpha.host.waitForReport(d.digest)).ok, true);
    const jsm = await jetstreamManager(admin);
    const spec = reportsStreamSpec(1);
    await jsm.streams.add({ ...spec, retention: RetentionPolicy.Limits, storage: StorageType.File });
    const stored = await waitFor(async () => {
      const last = await jsm.streams.getMessage(REPORTS_STREAM, { last_by_subj: reportSubject("alpha") }).catch(() => null);
      return last?.json<HostReport>().digest === d.digest ? last : undefined;
    }, { timeoutMs: 15_000, name: "alpha's report stored in REPORTS" });
    assert.equal(stored.json<HostReport>().ok, true);
  });
});

describe("host agent: drift of the files it owns (R55)", () => {
  let server: NatsServer;
  let admin: NatsConnection;
  let root: string;
  const adminPassword = mint();
  const nodes = ["drift-start", "drift-interval", "drift-unsent"] as const;
  const prepared: Record<string, { stateDir: string; publicKey: string; password: string }> = {};
  const running: Host[] = [];

  before(async () => {
    root = mkdtempSync(join(tmpdir(), "mesh-host-drift-"));
    for (const node of nodes) prepared[node] = prepareNode(root, node);
    const users = renderUserList({ users: [adminUser(adminPassword), ...nodes.map((n) => nodeUser(n, prepared[n]!.password))] });
    server = await startNatsServer({ files: { "users.conf": users }, config: `include "users.conf"` });
    admin = await connect({ servers: server.url, authenticator: nkeyAuthenticator(new TextEncoder().encode(adminPassword)) });
    const jsm = await jetstreamManager(admin);
    await raiseControl(jsm);
    for (const node of nodes) await raiseConsumer(jsm, node);
  });
  after(async () => {
    for (const host of running) await host.stop();
    await admin?.close();
    await server?.stop();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  /** Starts `node`'s agent re-checking every `checkIntervalMs` (0: at start only). */
  const start = (node: string, checkIntervalMs: number, lines: string[]): Host => {
    const p = prepared[node]!;
    const host = startHost({
      stateDir: p.stateDir, node, checkIntervalMs,
      credential: { address: server.url, user: busUser("node", node), seed: p.password },
      log: (line) => lines.push(line),
      backoff: { initialMs: 50, maxMs: 400 },
    });
    running.push(host);
    return host;
  };

  /** Collects the reports published on `node`'s report subject. */
  const listen = async (node: string): Promise<{ reports: HostReport[]; stop(): void }> => {
    const reports: HostReport[] = [];
    const sub = admin.subscribe(reportSubject(node), { callback: (_e, m) => { reports.push(m.json<HostReport>()); } });
    await admin.flush();
    return { reports, stop: () => sub.unsubscribe() };
  };

  it("R55: at start, a host writes back the files of its last declaration removed while it was down, and reports the drift", async () => {
    const node = "drift-start";
    const p = prepared[node]!;
    const lines: string[] = [];
    const first = start(node, 0, lines);
    const d = declaration(node, p.publicKey, [{ module: "web", password: mint() }, { module: "cache", password: mint() }]);
    await publishDeclaration(admin, d);
    assert.equal((await first.waitForReport(d.digest)).ok, true);
    await first.stop();
    // by hand, while the agent is down: a file removed, one changed, a whole module's folder removed
    const credential = join(p.stateDir, "modules", "web", "credential.json");
    const original = readFileSync(credential, "utf8");
    rmSync(credential);
    writeFileSync(join(p.stateDir, "modules", "web", "module.json"), "{}\n");
    rmSync(join(p.stateDir, "modules", "cache"), { recursive: true, force: true });
    const heard = await listen(node);
    try {
      start(node, 0, lines);
      assert.equal(readFileSync(credential, "utf8"), original, "written back at start, before any connection");
      const drift = await waitFor(() => heard.reports.find((r) => r.drift !== undefined), { timeoutMs: 10_000, name: "the drift report" });
      assert.equal(drift.digest, d.digest);
      assert.equal(drift.ok, true);
      assert.deepEqual(drift.drift, ["modules/cache/credential.json", "modules/cache/env", "modules/cache/module.json", "modules/web/credential.json", "modules/web/module.json"]);
      assert.ok(lines.some((l) => l.includes("had drifted and were written back")), "the host logs it");
      assertNoPassword(lines);
    } finally {
      heard.stop();
    }
  });

  it("R55: a running host re-checks at its interval, writes back a removed file and reports it", async () => {
    const node = "drift-interval";
    const p = prepared[node]!;
    const lines: string[] = [];
    const host = start(node, 100, lines);
    const d = declaration(node, p.publicKey, [{ module: "web", password: mint() }]);
    await publishDeclaration(admin, d);
    assert.equal((await host.waitForReport(d.digest)).ok, true);
    const heard = await listen(node);
    try {
      const env = join(p.stateDir, "modules", "web", "env");
      rmSync(env);
      const drift = await waitFor(() => heard.reports.find((r) => r.drift !== undefined), { timeoutMs: 10_000, name: "the drift report" });
      assert.deepEqual(drift.drift, ["modules/web/env"]);
      assert.equal(drift.digest, d.digest);
      assert.ok(existsSync(env), "the env file is back");
      assert.equal(statSync(env).mode & 0o777, 0o600);
    } finally {
      heard.stop();
    }
  });

  it("R55 R32 (issue 25): drift whose report the bus has not stored yet is carried by the next declaration's report, never lost", async () => {
    const node = "drift-unsent";
    const p = prepared[node]!;
    const lines: string[] = [];
    const host = start(node, 100, lines);
    const d = declaration(node, p.publicKey, [{ module: "web", password: mint() }]);
    await publishDeclaration(admin, d);
    assert.equal((await host.waitForReport(d.digest)).ok, true);
    const jsm = await jetstreamManager(admin);
    const next = declaration(node, p.publicKey, [{ module: "web", password: mint() }, { module: "cache", password: mint() }]);
    // REPORTS cannot take a report for a while (the node cut off from it): the drift report waits
    await jsm.streams.delete(REPORTS_STREAM);
    try {
      rmSync(join(p.stateDir, "modules", "web", "env"));
      await waitFor(() => lines.some((l) => l.includes("had drifted")), { timeoutMs: 10_000, name: "the drift found" });
      await publishDeclaration(admin, next);
      assert.equal((await host.waitForReport(next.digest)).ok, true);
    } finally {
      await jsm.streams.add({ ...reportsStreamSpec(1), retention: RetentionPolicy.Limits, storage: StorageType.File });
    }
    const stored = await waitFor(async () => {
      const last = await jsm.streams.getMessage(REPORTS_STREAM, { last_by_subj: reportSubject(node) }).catch(() => null);
      return last?.json<HostReport>().digest === next.digest ? last.json<HostReport>() : undefined;
    }, { timeoutMs: 15_000, name: "the next declaration's report stored" });
    assert.deepEqual(stored.drift, ["modules/web/env"], "the drift found before it is in the report that replaced its own");
  });
});
