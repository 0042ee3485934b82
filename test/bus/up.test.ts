import { secretOf, withSecret } from "../../src/bus/connect.ts";
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, nkeyAuthenticator } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { up, operatorConnection, operatorUser, pushAndWait, pidFile, HOST_DIR } from "../../src/up/up.ts";
import { inProcessLauncher, type InProcessLauncher } from "../../src/up/daemon.ts";
import { recordPid, runningPid, stopAll, SUPERVISOR } from "../../src/up/processes.ts";
import { renderSummary } from "../../src/up/summary.ts";
import { freePort } from "../../installer/serverConfig.ts";
import { readUserList } from "../../installer/carried.ts";
import { BOOTSTRAP_SEED, BOOTSTRAP_USER } from "../../src/genesis.ts";
import { connectToBus, BusConnectError, type BusCredential } from "../../src/bus/connect.ts";
import { readBusCredential } from "../../src/files/index.ts";
import { askAs } from "../support/client.ts";
import { runCli } from "../../src/cli/run.ts";
import { EXIT_OK, EXIT_REFUSED, type CliIo } from "../../src/cli/context.ts";
import { printUp } from "../../src/cli/up.ts";
import { exitOf } from "../../src/cli/push.ts";
import { VERBS_VERSION } from "../../src/contracts/verbs.ts";
import { initHostKeys, rotateNodeKey, saveNodeCredential, startHost, readCredentialFile, NODE_CREDENTIAL_FILE, type Host } from "../../src/host/index.ts";
import { secretMatches } from "../../src/crypto/secrets.ts";
import { workConsumer, workStream, workSubject } from "../../src/names.ts";
import { waitFor } from "../support/natsServer.ts";
import { localMesh } from "../support/localMesh.ts";
import { watchViolations } from "../support/violations.ts";
import { parseEnvFile } from "../../src/files/envFile.ts";

/**
 * The end-to-end story of the embedded default: `mesh up` in a temporary folder on a free port,
 * with the controller and the host agent in this process (the bus is a child process), then what
 * an operator does next. Every line any part logged is kept and searched for every password.
 */

const NODE = "alpha";

function credentialFile(path: string): BusCredential {
  return readBusCredential(path);
}

/** A module's `env` file (`KEY='value'` lines) as a record. */
function envFile(path: string): Record<string, string> {
  return parseEnvFile(readFileSync(path, "utf8"));
}

function isAuthorizationRefusal(error: unknown): boolean {
  return error instanceof BusConnectError && /user or password|authorization/i.test(error.message);
}

describe("mesh up (embedded default, end to end)", () => {
  let beta: Host | undefined;
  after(async () => { await beta?.stop(); });
  const local = localMesh({ prefix: "mesh-up-" });
  const { logs, log, ask } = local;

  /**
   * A second node, beta, enrolled with its host running and applied: the R1 test makes it step by
   * step with its assertions; a test that needs beta and runs without it gets it here.
   */
  async function ensureBeta(): Promise<void> {
    if (beta !== undefined) return;
    const betaDir = join(local.root, "beta");
    const { publicKey, nkey } = initHostKeys(betaDir);
    saveNodeCredential(betaDir, await ask("node.enrol", { node: "beta", publicKey, nkey }));
    const credential = readCredentialFile(join(betaDir, NODE_CREDENTIAL_FILE), betaDir);
    beta = startHost({ stateDir: betaDir, node: "beta", credential, log, backoff: { initialMs: 100, maxMs: 500 } });
    const pushed = await pushAndWait(local.operator, operatorUser(local.result.paths), 20_000);
    assert.deepEqual(pushed.timedOut, [], JSON.stringify(pushed));
    await waitFor(() => beta!.reports.length > 0 && beta!.bound(), { timeoutMs: 10_000, name: "beta's report" });
  }

  it("R32: the summary shows the example mesh applied on the local node, every seat held, every principal on the bus", () => {
    const { summary } = local.result;
    assert.deepEqual(summary.nodes.map((n) => n.name), [NODE]);
    const node = summary.nodes[0]!;
    assert.equal(node.hub, true);
    for (const module of ["broker", "builder", "showcase", "store", "mesh-controller"]) assert.ok(node.modules.includes(module), `${module} is assigned`);
    for (const seat of summary.seats) assert.deepEqual(seat.holders, [NODE], `seat ${seat.name} is held by ${NODE}`);
    const applied = summary.applied.find((a) => a.node === NODE);
    assert.ok(applied?.ok, "the local node applied its declaration");
    assert.equal(applied.digest, node.lastSent, "what it applied is what was last sent to it");
    assert.ok(applied.files.some((f) => f.startsWith("modules/showcase/")));
    const users = summary.busUsers.map((u) => u.user);
    for (const user of ["operator-admin", `node-${NODE}`, "module-showcase", "module-builder", BOOTSTRAP_USER]) assert.ok(users.includes(user), `${user} is on the bus`);
    const text = renderSummary(summary).join("\n");
    for (const heading of ["nodes:", "seats:", "users on the bus:", "applied:"]) assert.ok(text.includes(heading));
    assert.ok(logs.some((l) => l.startsWith("up: pushing")), "progress lines were shown");
  });

  it("R14: after the first composition the bus refuses the bootstrap password", async () => {
    const current = credentialFile(local.result.paths.controllerCredential);
    assert.notEqual(secretOf(current), BOOTSTRAP_SEED, "the controller's credential file holds its rotated password");
    await assert.rejects(
      connectToBus(withSecret(current, BOOTSTRAP_SEED), { reconnect: false }),
      isAuthorizationRefusal,
    );
    const listed = readUserList(readFileSync(local.result.paths.userList, "utf8")).find((u) => u.user === BOOTSTRAP_USER);
    assert.ok(listed && secretMatches(secretOf(current), { nkey: listed.nkey }) && !secretMatches(BOOTSTRAP_SEED, { nkey: listed.nkey }));
  });

  it("R14: a controller restart keeps the rotated password, never the bootstrap one", async () => {
    const rotated = secretOf(credentialFile(local.result.paths.controllerCredential));
    await local.launcher.stopController();
    await local.launcher.controller(local.result.paths);
    await ask("nodes");
    const pushed = await pushAndWait(local.operator, operatorUser(local.result.paths), 20_000);
    assert.deepEqual(pushed.timedOut, []);
    assert.equal(secretOf(credentialFile(local.result.paths.controllerCredential)), rotated);
    const listed = readUserList(readFileSync(local.result.paths.userList, "utf8")).find((u) => u.user === BOOTSTRAP_USER)!;
    assert.ok(secretMatches(rotated, { nkey: listed.nkey }), "the user list still carries the rotated password");
    assert.ok(!secretMatches(BOOTSTRAP_SEED, { nkey: listed.nkey }), "and never the bootstrap one");
    await assert.rejects(
      connectToBus(withSecret(credentialFile(local.result.paths.controllerCredential), BOOTSTRAP_SEED), { reconnect: false }),
      isAuthorizationRefusal,
    );
  });

  it("R1: a node's credential is refused by the bus before the push that composes it and accepted after", async () => {
    const betaDir = join(local.root, "beta");
    const { publicKey, nkey } = initHostKeys(betaDir);
    saveNodeCredential(betaDir, await ask("node.enrol", { node: "beta", publicKey, nkey }));
    const credential = readCredentialFile(join(betaDir, NODE_CREDENTIAL_FILE), betaDir);
    await assert.rejects(connectToBus(credential, { reconnect: false }), isAuthorizationRefusal);
    beta = startHost({ stateDir: betaDir, node: "beta", credential, log, backoff: { initialMs: 100, maxMs: 500 } });
    // `mesh push --wait` from the CLI, one request: its reply survives the reload of the user list
    // this push causes (beta joins it), as the controller answers by its grant on the operator's inbox (R33)
    const listBefore = readFileSync(local.result.paths.userList, "utf8");
    let out = "";
    let err = "";
    const io: CliIo = {
      stdout: { write: (text: string) => { out += text; } },
      stderr: { write: (text: string) => { err += text; } },
      env: { MESH_CREDENTIAL: local.result.paths.operatorCredential, MESH_TIMEOUT_MS: "20000" },
    };
    const code = await runCli(["push", "--wait", "--json"], io);
    assert.equal(code, EXIT_OK, `mesh push --wait: ${out} ${err}`);
    const pushed = JSON.parse(out) as { timedOut: string[]; nodes: Array<{ node: string; outcome: string }> };
    assert.deepEqual(pushed.timedOut, []);
    assert.ok(pushed.nodes.some((n) => n.node === NODE && n.outcome === "applied"), "the broker's holder applied the new list");
    assert.notEqual(readFileSync(local.result.paths.userList, "utf8"), listBefore, "the push changed the user list (the bus reloaded it)");
    const nc = await connectToBus(credential, { reconnect: false });
    await nc.close();
    await waitFor(() => beta!.reports.length > 0, { timeoutMs: 10_000, name: "beta's report" });
    assert.equal(beta.reports.at(-1)?.ok, true);
  });

  it("R31 R14 R50 R64: a node's rotated key (made by its host) reaches the running host in its declaration; the bus refuses the old seed and the host comes back with the new one", async () => {
    await ensureBeta();
    const alphaDir = join(local.dir, HOST_DIR);
    const betaDir = join(local.root, "beta");
    const alphaFile = join(alphaDir, NODE_CREDENTIAL_FILE);
    const betaFile = join(betaDir, NODE_CREDENTIAL_FILE);
    const applied = (pushed: Record<string, unknown>, node: string) =>
      ((pushed.nodes ?? []) as Array<{ node: string; outcome: string }>).some((n) => n.node === node && n.outcome === "applied");
    // The broker's holder itself: its own reload drops its connection, which must come back with the new password.
    const oldAlpha = readCredentialFile(alphaFile, alphaDir);
    await ask("credential.rotate", { kind: "node", name: NODE, nkey: rotateNodeKey(alphaDir).nkey });
    const first = await pushAndWait(local.operator, operatorUser(local.result.paths), 20_000);
    assert.deepEqual(first.timedOut, [], JSON.stringify(first));
    assert.ok(applied(first, NODE), `the holder applied its rotation: ${JSON.stringify(first.nodes)}`);
    const newAlpha = readCredentialFile(alphaFile, alphaDir);
    assert.notEqual(secretOf(newAlpha), secretOf(oldAlpha), "the host took its new seed");
    assert.equal(existsSync(join(alphaDir, "node.seed.next")), false, "its pending seed became its current one");
    assert.equal(statSync(alphaFile).mode & 0o777, 0o600);
    await assert.rejects(connectToBus(oldAlpha, { reconnect: false }), isAuthorizationRefusal);
    await (await connectToBus(newAlpha, { reconnect: false })).close();
    // Another node: rotating it changes the list, so the holder's next declaration is applied too
    // (over the connection it re-made with its new password).
    const oldBeta = readCredentialFile(betaFile, betaDir);
    const reconnects = () => logs.filter((l) => l === "host beta: reconnected to the bus").length;
    const before = reconnects();
    await ask("credential.rotate", { kind: "node", name: "beta", nkey: rotateNodeKey(betaDir).nkey });
    const second = await pushAndWait(local.operator, operatorUser(local.result.paths), 20_000);
    assert.deepEqual(second.timedOut, [], JSON.stringify(second));
    assert.ok(applied(second, NODE) && applied(second, "beta"), `both applied: ${JSON.stringify(second.nodes)}`);
    const newBeta = readCredentialFile(betaFile, betaDir);
    assert.notEqual(secretOf(newBeta), secretOf(oldBeta));
    await assert.rejects(connectToBus(oldBeta, { reconnect: false }), isAuthorizationRefusal);
    // The reload dropped beta's connection (its password changed); it comes back with the new one.
    await waitFor(() => reconnects() > before && beta!.bound(), { timeoutMs: 10_000, name: "beta reconnected" });
    // Beta's next declaration reaches it over its re-made connection.
    const reported = beta!.reports.length;
    await ask("credential.rotate", { kind: "node", name: "beta", nkey: rotateNodeKey(betaDir).nkey });
    const third = await pushAndWait(local.operator, operatorUser(local.result.paths), 20_000);
    assert.deepEqual(third.timedOut, [], JSON.stringify(third));
    assert.ok(applied(third, "beta"), `beta applied its next declaration: ${JSON.stringify(third.nodes)}`);
    assert.ok(beta!.reports.length > reported && beta!.reports.at(-1)?.ok);
    assert.notEqual(secretOf(readCredentialFile(betaFile, betaDir)), secretOf(newBeta));
  });

  it("R16: a module pulls work from its seat's queue with the credential its node was given", async () => {
    const modules = join(local.dir, HOST_DIR, "modules");
    const submitter = await connectToBus(credentialFile(join(modules, "showcase", "credential.json")), { reconnect: false });
    const worker = await connectToBus(credentialFile(join(modules, "builder", "credential.json")), { reconnect: false });
    try {
      const job = `build-${Date.now()}`;
      await jetstream(submitter).publish(workSubject("mesh-build", "build"), JSON.stringify({ job }));
      const consumer = await jetstream(worker).consumers.get(workStream("mesh-build"), workConsumer("mesh-build"));
      const message = await consumer.next({ expires: 5_000 });
      assert.ok(message, "the builder pulled the work");
      assert.deepEqual(message.json(), { job });
      await message.ackAck();
    } finally {
      await submitter.close();
      await worker.close();
    }
  });

  it("R7 R10: a module assigned to the hub before it is issued dials the same address as one issued first, and the bus admits both", async () => {
    const manifest = (name: string) => ({ name, version: "0.1.0", uses: ["mesh-build"] });
    // first issued, then assigned; and the other way round, both on the hub (alpha is placed as hub)
    await ask("module.register", { manifest: manifest("issued-first") });
    await ask("module.issue", { module: "issued-first" });
    await ask("assign", { module: "issued-first", node: NODE });
    await ask("module.register", { manifest: manifest("assigned-first") });
    await ask("assign", { module: "assigned-first", node: NODE });
    await ask("module.issue", { module: "assigned-first" });
    const pushed = await pushAndWait(local.operator, operatorUser(local.result.paths), 20_000);
    assert.deepEqual(pushed.timedOut, [], JSON.stringify(pushed));
    const modules = join(local.dir, HOST_DIR, "modules");
    const first = credentialFile(join(modules, "issued-first", "credential.json"));
    const second = credentialFile(join(modules, "assigned-first", "credential.json"));
    assert.equal(second.address, first.address, "the order of issue and assign does not change the address");
    assert.equal(first.address, local.result.summary.mesh.genesisAddress, "on one machine it is the genesis address");
    for (const credential of [first, second]) await (await connectToBus(credential, { reconnect: false })).close();
  });

  it("R57 R33: a module dialling with exactly its env file pulls its work, announces its event and answers a tool; with the default _INBOX. it is refused", async () => {
    const modules = join(local.dir, HOST_DIR, "modules");
    const builderEnv = envFile(join(modules, "builder", "env"));
    const showcaseEnv = envFile(join(modules, "showcase", "env"));
    assert.ok(existsSync(builderEnv.MESH_BROKER_CERTIFICATE_FILE!), "the env names the certificate's PEM file");
    // a standard client: address, user, password, inbox prefix and the certificate file, nothing else of the mesh's
    const standard = (env: Record<string, string>, withPrefix: boolean) => {
      const { hostname, port } = new URL(env.MESH_BROKER_ADDRESS!.replace(/^tls:/, "https:"));
      return connect({
        servers: `${hostname}:${port}`, authenticator: nkeyAuthenticator(new TextEncoder().encode(env.MESH_NKEY_SEED!)), reconnect: false,
        tls: { caFile: env.MESH_BROKER_CERTIFICATE_FILE! },
        ...(withPrefix ? { inboxPrefix: env.MESH_INBOX_PREFIX! } : {}),
      });
    };
    const [work] = JSON.parse(builderEnv.MESH_WORK!) as Array<{ stream: string; consumer: string; subjects: string[] }>;
    const [emit] = JSON.parse(builderEnv.MESH_EMITS!) as Array<{ subject: string }>;
    const [submit] = JSON.parse(showcaseEnv.MESH_SUBMITS!) as Array<{ subject: string }>;
    const [tool] = JSON.parse(showcaseEnv.MESH_TOOLS!) as Array<{ subject: string }>;
    assert.ok(work && emit && submit && tool, "the env names the builder's queue and event, the showcase's submit and tool");
    assert.ok(work.subjects.includes(submit.subject), "what the showcase submits is what the builder pulls");
    const builder = await standard(builderEnv, true);
    const showcase = await standard(showcaseEnv, true);
    try {
      const job = `env-${Date.now()}`;
      await jetstream(showcase).publish(submit.subject, JSON.stringify({ job }));
      const consumer = await jetstream(builder).consumers.get(work.stream, work.consumer);
      const message = await consumer.next({ expires: 5_000 });
      assert.deepEqual(message?.json(), { job }, "the builder pulled the work");
      await message!.ackAck();
      const ack = await jetstream(builder).publish(emit.subject, JSON.stringify({ job, built: true }));
      assert.ok(ack.seq > 0, "the event was stored");
      const answering = showcase.subscribe(tool.subject, { callback: (_error, msg) => { msg.respond("hello"); } });
      await showcase.flush();
      const answer = await local.operator.request(tool.subject, "hi", { timeout: 5_000 });
      assert.equal(answer.string(), "hello", "the showcase answered its tool");
      answering.unsubscribe();
    } finally {
      await builder.close();
      await showcase.close();
    }
    // the same client without the inbox prefix: its reply inbox is refused, so no request completes
    const plain = await standard(builderEnv, false);
    const violations = watchViolations(plain);
    try {
      await assert.rejects(jetstream(plain, { timeout: 2_000 }).publish(emit.subject, "{}"));
      await waitFor(() => violations.some((v) => v.operation === "subscription" && v.subject.startsWith("_INBOX.")), { timeoutMs: 5_000, name: "the _INBOX. subscription refused" });
    } finally {
      await plain.close();
    }
  });

  it("R29: unassigning a module removes its resources from the host and keeps a file the host found there", async () => {
    const folder = join(local.dir, HOST_DIR, "modules", "npm");
    assert.ok(existsSync(join(folder, "module.json")));
    writeFileSync(join(folder, "notes.txt"), "kept by the operator");
    await ask("unassign", { module: "npm", node: NODE });
    const pushed = await pushAndWait(local.operator, operatorUser(local.result.paths), 20_000);
    assert.deepEqual(pushed.timedOut, []);
    assert.ok(!existsSync(join(folder, "module.json")), "the mesh's file is removed");
    assert.ok(!existsSync(join(folder, "credential.json")), "its credential is removed");
    assert.equal(readFileSync(join(folder, "notes.txt"), "utf8"), "kept by the operator");
  });

  it("R13: `mesh up` again resumes the same mesh from its records and changes nothing", async () => {
    await ensureBeta();
    const again = await up({ dir: local.dir, log, launcher: local.launcher, detachBus: false, timeoutMs: 30_000 });
    assert.equal(again.summary.mesh.fingerprint, local.result.summary.mesh.fingerprint);
    assert.equal(again.node, NODE);
    assert.deepEqual(again.summary.nodes.map((n) => n.name).sort(), ["alpha", "beta"]);
    const nodes = (again.push.nodes ?? []) as Array<{ node: string; outcome: string }>;
    assert.ok(nodes.every((n) => n.outcome === "unchanged"), `nothing new was sent: ${JSON.stringify(nodes)}`);
  });

  // Found by a new-user trial: the first summary said "supervisor stopped" while it ran, as the
  // supervisor was started after the summary was read.
  it("R76: the summary `mesh up` prints shows the supervisor it started running", async () => {
    const stand = spawn("sleep", ["60"], { stdio: "ignore" });
    try {
      const launcher = { ...local.launcher, supervise: async (paths: { dir: string }) => recordPid(paths.dir, SUPERVISOR, stand.pid!) };
      const again = await up({ dir: local.dir, log, launcher, detachBus: false, timeoutMs: 30_000 });
      assert.equal(again.summary.processes[SUPERVISOR], stand.pid);
    } finally {
      rmSync(pidFile(local.dir, SUPERVISOR), { force: true });
      stand.kill();
    }
  });

  // Found by a new-user trial: `--cluster` on a mesh that exists was ignored without a word.
  it("R62: `mesh up --cluster 3` on a mesh of one server is refused naming --cluster, and starts or changes nothing", async () => {
    const before = readFileSync(join(local.dir, "mesh.json"), "utf8");
    const lines = logs.length;
    await assert.rejects(up({ dir: local.dir, log, launcher: local.launcher, detachBus: false, timeoutMs: 30_000, cluster: 3 }), (error: Error) => {
      assert.equal(error.name, "UpError");
      assert.match(error.message, /--cluster/);
      assert.match(error.message, /1 server/);
      return true;
    });
    assert.equal(readFileSync(join(local.dir, "mesh.json"), "utf8"), before, "the mesh's file is as it was");
    assert.ok(!logs.slice(lines).some((l) => l.includes("starting the bus server")), logs.slice(lines).join("\n"));
  });

  // Found by a new-user trial: `mesh status --json` carried no contract version where other verbs' replies do.
  it("`mesh status --json` carries the contract's version v, as every reply from the controller does", async () => {
    let out = "";
    const io: CliIo = { stdout: { write: (s: string) => { out += s; } }, stderr: { write: () => true }, env: {} };
    assert.equal(await runCli(["status", "--dir", local.dir, "--json"], io), EXIT_OK, out);
    const printed = JSON.parse(out) as { ok: boolean; v?: number; summary: { nodes: Array<{ name: string }> } };
    assert.equal(printed.ok, true);
    assert.equal(printed.v, VERBS_VERSION);
    assert.ok(printed.summary.nodes.some((n) => n.name === NODE));
  });

  it("R3: no log line of the whole run carries a password", () => {
    const passwords = new Set<string>([BOOTSTRAP_SEED]);
    const add = (file: string) => { if (existsSync(file)) passwords.add(secretOf(credentialFile(file))); };
    add(local.result.paths.operatorCredential);
    add(local.result.paths.controllerCredential);
    add(join(local.dir, HOST_DIR, NODE_CREDENTIAL_FILE));
    add(join(local.root, "beta", NODE_CREDENTIAL_FILE));
    const modules = join(local.dir, HOST_DIR, "modules");
    for (const module of readdirSync(modules)) add(join(modules, module, "credential.json"));
    assert.ok(passwords.size >= 8, `every minted password is searched for (${passwords.size})`);
    const all = [...logs, readFileSync(join(local.result.paths.logs, "bus.log"), "utf8")];
    for (const line of all) {
      for (const password of passwords) assert.ok(!line.includes(password), `a log line carries a password: ${line.slice(0, 120)}`);
    }
  });
});

/**
 * Found by a new-user trial: `mesh up` with an enrolled node whose host agent is not running waited
 * out the push and exited 0, where `mesh push` exits 1 for the same report. Its own mesh, so the
 * node without an agent is in no other test's way.
 */
describe("mesh up with an enrolled node whose host agent is not running", () => {
  let root: string;
  let dir: string;
  let launcher: InProcessLauncher;
  const logs: string[] = [];
  const log = (line: string) => { logs.push(line); };

  before(async () => {
    root = mkdtempSync(join(tmpdir(), "mesh-up-stopped-"));
    dir = join(root, ".mesh");
    launcher = inProcessLauncher(log);
    const port = await freePort();
    const first = await up({ dir, log, launcher, brokerAddress: `tls://127.0.0.1:${port}`, node: NODE, detachBus: false, timeoutMs: 30_000 });
    const operator = await operatorConnection(first.paths);
    try {
      const { publicKey, nkey } = initHostKeys(join(root, "gamma"));
      const enrolled = await askAs(operator, operatorUser(first.paths), "node.enrol", { node: "gamma", publicKey, nkey }, 30_000);
      assert.ok(enrolled.ok, JSON.stringify(enrolled));
    } finally {
      await operator.close();
    }
  });
  after(async () => {
    await launcher?.stop();
    if (dir) await stopAll(dir);
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it("R32: exits 1 as `mesh push` does for the same report, naming the node and the fix, and leaves the mesh running", async () => {
    const again = await up({ dir, log, launcher, detachBus: false, timeoutMs: 5_000 });
    assert.deepEqual(again.push.timedOut, ["gamma"], JSON.stringify(again.push));
    const err: string[] = [];
    const ctx = { out: () => undefined, err: (line: string) => { err.push(line); }, globals: { json: false, credential: "", timeoutMs: 5_000 } };
    assert.equal(printUp(ctx, again, dir), exitOf(again.push));
    assert.equal(printUp(ctx, again, dir), EXIT_REFUSED);
    assert.ok(err.some((l) => l.includes("gamma") && /agent/.test(l)), err.join("\n"));
    // The processes stay up: the bus, and the local host still applied alpha's declaration.
    assert.notEqual(runningPid(dir, "bus"), null, "the bus still runs");
    assert.equal(launcher.hostAgent?.bound(), true, "the local host agent still runs");
    assert.equal(again.push.nodes.find((n) => n.node === NODE)?.outcome === "timed-out", false);
  });
});
