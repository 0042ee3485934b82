import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, nkeyAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import { AckPolicy, jetstream, jetstreamManager, RetentionPolicy, StorageType } from "@nats-io/jetstream";
import { startNatsServer, waitFor, type NatsServer } from "../support/natsServer.ts";
import {
  CONTROL_STREAM, CONTROL_SUBJECTS, busUser, declarationConsumer, declarationFilter, declarationSubject, inboxPrefix, logsSubject, reportSubject,
} from "../../src/names.ts";
import { newUserKey, publicKeyOfSeed } from "../../src/crypto/secrets.ts";
import { permissionsOf, renderUserList, type BusUser } from "../../src/compose/index.ts";
import { MeshBuilder } from "../unit/compose/exampleMesh.ts";
import { reportsStreamSpec } from "../../src/controller/planRaise.ts";
import { initHostKeys, startHost, type Host } from "../../src/host/index.ts";
import { parseHostReport, type ModuleRun } from "../../src/contracts/report.ts";
import { LogsReply } from "../../src/contracts/logs.ts";
import { MODULE_LOG_BYTES, moduleLogFile } from "../../src/host/moduleLog.ts";
import { hostDeclaration } from "../support/hostDeclaration.ts";
import { runMesh } from "../support/cli.ts";
import { EXIT_OK, EXIT_REFUSED } from "../../src/cli/context.ts";

/**
 * The module runner (R72) against a real nats-server and a real host agent: declarations naming a
 * `run.command` (a small node script, test/fixtures/runnerModule.mjs) are published as push
 * publishes them, and the node's reports on the bus say how each module runs.
 */

const FIXTURE = join(import.meta.dirname, "../fixtures/runnerModule.mjs");
const CONFIG = { controllerSubmits: [] as string[] };
const command = (how: string, grace?: number) => ({ run: { command: [process.execPath, FIXTURE, how], ...(grace === undefined ? {} : { grace }) } });

/** The records the grants are composed from: an operator with a credential, whom the nodes answer (R33). */
const RECORDS = new MeshBuilder().genesis().operator("ops").state();

function principalUser(kind: "node" | "operator" | "module", name: string, seed: string): BusUser {
  const principal = { kind, name };
  return { user: busUser(kind, name), nkey: publicKeyOfSeed(seed), permissions: permissionsOf(RECORDS, principal, CONFIG), principal };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("R72: the host agent runs its modules", () => {
  let server: NatsServer;
  let admin: NatsConnection;
  let root: string;
  let host: Host;
  let publicKey: string;
  let stateDir: string;
  const seeds = { admin: newUserKey().seed, alpha: newUserKey().seed, ops: newUserKey().seed, beta: newUserKey().seed, echo: newUserKey().seed };
  /** alpha's reports as the bus delivered them, newest last. */
  const reports: Array<{ at: number; modules: ModuleRun[] }> = [];
  const lines: string[] = [];
  let sequence = 0;

  before(async () => {
    root = mkdtempSync(join(tmpdir(), "mesh-runner-"));
    stateDir = join(root, "alpha");
    ({ publicKey } = initHostKeys(stateDir));
    const users = renderUserList({
      users: [
        { user: "admin", nkey: publicKeyOfSeed(seeds.admin), permissions: { publish: { allow: [">"] }, subscribe: { allow: [">"] } }, principal: { kind: "controller", name: "mesh-controller" } },
        principalUser("node", "alpha", seeds.alpha), principalUser("node", "beta", seeds.beta),
        principalUser("operator", "ops", seeds.ops), principalUser("module", "echo", seeds.echo),
      ],
    });
    server = await startNatsServer({ files: { "users.conf": users }, config: `include "users.conf"` });
    admin = await connect({ servers: server.url, authenticator: nkeyAuthenticator(new TextEncoder().encode(seeds.admin)) });
    const jsm = await jetstreamManager(admin);
    await jsm.streams.add({ name: CONTROL_STREAM, subjects: [CONTROL_SUBJECTS], max_msgs_per_subject: 1, retention: RetentionPolicy.Limits });
    await jsm.streams.add({ ...reportsStreamSpec(1), retention: RetentionPolicy.Limits, storage: StorageType.File });
    await jsm.consumers.add(CONTROL_STREAM, { durable_name: declarationConsumer("alpha"), filter_subject: declarationFilter("alpha"), ack_policy: AckPolicy.Explicit });
    admin.subscribe(reportSubject("alpha"), {
      callback: (_e, m) => { reports.push({ at: Date.now(), modules: parseHostReport(m.json()).modules ?? [] }); },
    });
    host = startHost({
      stateDir, node: "alpha", credential: { address: server.url, user: busUser("node", "alpha"), seed: seeds.alpha },
      log: (line) => lines.push(line), backoff: { initialMs: 50, maxMs: 400 }, checkIntervalMs: 0,
      runner: { restart: { initialMs: 1_500, maxMs: 3_000 } },
    });
    await waitFor(() => host.bound(), { timeoutMs: 10_000, name: "alpha bound" });
  });
  after(async () => {
    await host?.stop();
    await admin?.close();
    await server?.stop();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  /** Publishes alpha's declaration of `modules` (each `{module, extra}`) as push does; returns when it was published. */
  async function push(modules: Array<{ module: string; extra: Record<string, unknown>; seed?: string }>): Promise<number> {
    sequence += 1;
    const seedOf = (m: { module: string; seed?: string }) => m.seed ?? (m.module === "echo" ? seeds.echo : newUserKey().seed);
    const d = hostDeclaration("alpha", publicKey, modules.map((m) => ({ module: m.module, password: seedOf(m), extra: m.extra })), `digest-${sequence}`);
    await jetstream(admin).publish(declarationSubject("alpha"), JSON.stringify(d));
    await host.waitForReport(d.digest);
    return Date.now();
  }

  /** The run state of `module` in alpha's newest report on the bus. */
  const stateOf = (module: string): ModuleRun | undefined => reports.at(-1)?.modules.find((m) => m.module === module);
  const until = (module: string, test: (m: ModuleRun) => boolean, name: string, timeoutMs = 5_000) =>
    waitFor(() => { const m = stateOf(module); return m !== undefined && test(m) ? m : undefined; }, { timeoutMs, name });

  it("R72: assign starts the module: its report says running within 5 s of the push, started with its own key", async () => {
    const pushed = await push([{ module: "echo", extra: command("steady") }]);
    const running = await until("echo", (m) => m.state === "running", "echo running");
    const seen = reports.find((r) => r.modules.some((m) => m.module === "echo" && m.state === "running"))!;
    assert.ok(seen.at - pushed < 5_000, `running reported ${seen.at - pushed} ms after the push`);
    assert.equal(running.startedWithNkey, publicKeyOfSeed(seeds.echo), "R73: the key the process was started with");
    assert.match(String(running.startedWithEnv), /^[0-9a-f]{64}$/);
    assert.ok(alive(running.pid!));
    await waitFor(() => readFileSync(moduleLogFile(stateDir, "echo"), "utf8").includes("hello from module-echo"), { name: "echo's output in its log" });
  });

  it("R72: kill -9 of the module's process brings it back with back-off", async () => {
    await push([{ module: "echo", extra: command("steady") }]);
    const before = await until("echo", (m) => m.state === "running", "echo running");
    process.kill(before.pid!, "SIGKILL");
    const exited = await until("echo", (m) => m.state === "exited" && m.signal === "SIGKILL", "echo reported killed");
    assert.ok(exited.backoffUntil !== undefined, "the exit names when it starts again");
    const again = await until("echo", (m) => m.state === "running" && m.pid !== before.pid, "echo running again");
    assert.equal(again.restarts, before.restarts + 1);
  });

  it("R72: a command that does not exist, exits at once or floods is reported and bounded; another module keeps running", async () => {
    await push([{ module: "echo", extra: command("steady") }]);
    const echo = await until("echo", (m) => m.state === "running", "echo running");
    await push([
      { module: "echo", extra: command("steady") },
      { module: "missing", extra: { run: { command: [join(root, "no-such-program")] } } },
      { module: "quitter", extra: command("quit") },
      { module: "flood", extra: command("flood") },
    ]);
    const missing = await until("missing", (m) => m.state === "exited" && m.error !== undefined && m.backoffUntil !== undefined, "missing reported exited");
    assert.match(String(missing.error), /ENOENT/);
    await until("quitter", (m) => m.state === "exited" && m.code === 3 && m.backoffUntil !== undefined, "quitter reported exited 3");
    await until("quitter", (m) => m.restarts >= 2, "quitter restarted with back-off", 10_000);
    await until("flood", (m) => m.state === "running", "flood running");
    const floodLog = moduleLogFile(stateDir, "flood");
    await waitFor(() => existsSync(`${floodLog}.2`), { timeoutMs: 15_000, name: "flood's log rotated twice" });
    for (const file of [floodLog, `${floodLog}.1`, `${floodLog}.2`]) {
      if (existsSync(file)) assert.ok(statSync(file).size <= MODULE_LOG_BYTES + 128 * 1024, `${file} is ${statSync(file).size} bytes`);
    }
    assert.equal(existsSync(`${floodLog}.3`), false, "two rotated logs kept");
    const still = stateOf("echo")!;
    assert.equal(still.state, "running");
    assert.equal(still.pid, echo.pid, "echo was not restarted");
    assert.ok(host.bound(), "the agent still serves");
  });

  it("R72: mesh logs returns a module's output for an operator and is refused for a node or module principal", async () => {
    await push([{ module: "echo", extra: command("steady") }]);
    await until("echo", (m) => m.state === "running", "echo running");
    const dial = (user: string, seed: string) =>
      connect({ servers: server.url, authenticator: nkeyAuthenticator(new TextEncoder().encode(seed)), inboxPrefix: inboxPrefix(user), reconnect: false });
    const ops = await dial(busUser("operator", "ops"), seeds.ops);
    try {
      const answer = LogsReply.parse((await ops.request(logsSubject("alpha"), JSON.stringify({ module: "echo", lines: 50 }), { timeout: 5_000 })).json());
      assert.ok(answer.ok, JSON.stringify(answer));
      assert.ok(answer.text.includes("hello from module-echo"), answer.text);
      const unknown = LogsReply.parse((await ops.request(logsSubject("alpha"), JSON.stringify({ module: "nope" }), { timeout: 5_000 })).json());
      assert.equal(unknown.ok === false && unknown.code, "no-module");
      // Found by a module author's trial: the answer sent to `mesh modules`, which named this node.
      assert.match(unknown.ok === false ? unknown.message : "", /not in a declaration this node applied \(a module assigned without a credential is left out: `mesh push` names it\)/);
    } finally {
      await ops.close();
    }
    // The CLI, as an operator would type it, then as the module itself.
    const credential = (name: string, user: string, seed: string) => {
      const file = join(root, `${name}.json`);
      writeFileSync(file, JSON.stringify({ address: server.url, user, seed }));
      return file;
    };
    const asOperator = await runMesh(["logs", "echo", "--node", "alpha", "--tail", "5"], { MESH_CREDENTIAL: credential("ops", busUser("operator", "ops"), seeds.ops) });
    assert.equal(asOperator.code, EXIT_OK, asOperator.err);
    assert.match(asOperator.out, /hello from module-echo/);
    assert.ok(asOperator.out.trimEnd().split("\n").length <= 5, "--tail 5");
    const asModule = await runMesh(["logs", "echo", "--node", "alpha", "--timeout", "1500"], { MESH_CREDENTIAL: credential("echo", busUser("module", "echo"), seeds.echo) });
    assert.equal(asModule.code, EXIT_REFUSED, asModule.out);
    for (const [user, seed] of [[busUser("module", "echo"), seeds.echo], [busUser("node", "beta"), seeds.beta]] as const) {
      const nc = await dial(user, seed);
      try {
        await assert.rejects(nc.request(logsSubject("alpha"), JSON.stringify({ module: "echo" }), { timeout: 1_500 }), `${user} may not ask`);
      } finally {
        await nc.close().catch(() => undefined);
      }
    }
  });

  it("R72 R73: a new seed in its env (a rotation) restarts it, and its report names the key it now runs with", async () => {
    await push([{ module: "echo", extra: command("steady") }]);
    const before = await until("echo", (m) => m.state === "running" && m.startedWithNkey === publicKeyOfSeed(seeds.echo), "echo running with its key");
    const rotated = newUserKey();
    await push([{ module: "echo", extra: command("steady"), seed: rotated.seed }]);
    const after = await until("echo", (m) => m.state === "running" && m.startedWithNkey === rotated.publicKey, "echo running with the new key");
    assert.notEqual(after.pid, before.pid);
    assert.notEqual(after.startedWithEnv, before.startedWithEnv);
    assert.equal(alive(before.pid!), false, "the old process was stopped");
    await push([{ module: "echo", extra: command("steady") }]);
    await until("echo", (m) => m.state === "running" && m.startedWithNkey === publicKeyOfSeed(seeds.echo), "echo running with its first key again");
  });

  it("R72: unassign stops the module within its grace, SIGKILL for one that ignores SIGTERM", async () => {
    await push([{ module: "echo", extra: command("steady") }, { module: "stubborn", extra: command("stubborn", 1) }]);
    const echo = await until("echo", (m) => m.state === "running", "echo running");
    const stubborn = await until("stubborn", (m) => m.state === "running", "stubborn running");
    const pushed = await push([]);
    await waitFor(() => !alive(echo.pid!), { timeoutMs: 2_000, name: "echo stopped on SIGTERM" });
    await waitFor(() => !alive(stubborn.pid!), { timeoutMs: 3_000, name: "stubborn killed after its 1 s grace" });
    assert.ok(Date.now() - pushed < 3_000);
    await waitFor(() => reports.at(-1)!.modules.length === 0, { name: "the report lists no module" });
    assert.match(readFileSync(moduleLogFile(stateDir, "stubborn"), "utf8"), /SIGTERM ignored/);
    assert.equal(existsSync(join(stateDir, "modules", "stubborn")), false, "R29: its folder goes with its files; its log is kept apart");
  });
});
