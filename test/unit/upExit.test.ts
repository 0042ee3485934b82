import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { leftRunningLine, nextSteps, printUp, upExitCode } from "../../src/cli/up.ts";
import { meshInvocation } from "../../src/config.ts";
import { addressResolves } from "../../src/up/up.ts";
import { BusConnectError } from "../../src/bus/connect.ts";
import { exitOf } from "../../src/cli/push.ts";
import { EXIT_OK, EXIT_REFUSED, EXIT_USAGE, type CliIo } from "../../src/cli/context.ts";
import { VERBS_VERSION, type PushReply } from "../../src/contracts/verbs.ts";
import type { UpResult } from "../../src/up/up.ts";
import type { UpSummary } from "../../src/up/summary.ts";
import { meshPaths } from "../../installer/genesis.ts";
import { runCli } from "../../src/cli/run.ts";
import { UpError } from "../../src/up/up.ts";
import { refusedStep, upOverRecordsBehind } from "../../src/up/errors.ts";
import { controllerExit, recordPid } from "../../src/up/processes.ts";
import { InstallerError } from "../../installer/tls.ts";
import { ConfigError } from "../../src/config.ts";

/**
 * How `mesh up` ends when a step fails, by docs/cli.md's exit codes (1 refused by the controller,
 * 2 a usage, configuration or connection error), and how it tells that the controller it started
 * has exited.
 */
describe("mesh up: exit codes", () => {
  it("a step the controller answered and refused (records-behind) exits 1, as every refusal does", () => {
    assert.equal(upExitCode(new UpError("the controller refused `mesh nodes` (records-behind): ...", "records-behind")), EXIT_REFUSED);
  });

  it("a controller that did not answer or exited, an installation or a configuration error exits 2", () => {
    assert.equal(upExitCode(new UpError("mesh up: the controller exited: controller: cannot start: ...")), EXIT_USAGE);
    assert.equal(upExitCode(new InstallerError("nats-server is not installed")), EXIT_USAGE);
    assert.equal(upExitCode(new ConfigError(["MESH_KEY_FILE"], "MESH_KEY_FILE is missing")), EXIT_USAGE);
  });
});

describe("mesh up that fails after starting processes (found by a new-user trial: an --address that does not resolve left the bus running, unsaid)", () => {
  it("names what still runs and the command that stops it; says nothing when nothing runs or the message says it already", () => {
    const line = leftRunningLine("/m", { bus: 41, controller: null, host: 43 }, "mesh: cannot connect to the bus at tls://foo:5333: getaddrinfo ENOTFOUND foo");
    assert.ok(line !== null, "a line");
    assert.match(line, /bus pid 41/);
    assert.match(line, /host pid 43/);
    assert.doesNotMatch(line, /controller/);
    assert.match(line, /`mesh down --dir \/m`/);
    assert.equal(leftRunningLine("/m", { bus: null, controller: null }, "anything"), null);
    assert.equal(leftRunningLine("/m", {}, "anything"), null);
    assert.equal(leftRunningLine("/m", { bus: 41 }, "...; the bus, the controller and the host agent are still running for that (`mesh down --dir /m` stops them)"), null);
  });

  it("a connection failure of mesh up exits 2 with a line of its own, as other connection failures do", () => {
    assert.equal(upExitCode(new BusConnectError("tls://foo:5333", "getaddrinfo ENOTFOUND foo")), EXIT_USAGE);
  });
});

describe("mesh up and mesh status over records behind (found by a new-user trial)", () => {
  const behind = { code: "records-behind", message: "the records are behind what the world has seen: ...; run `mesh replay`, then `mesh replay --accept-restore`" };

  it("R43: a records-behind refusal of a read up or status makes by itself names no verb the person never ran", () => {
    for (const verb of ["nodes", "seats", "credentials", "reports", "modules"] as const) {
      const error = refusedStep(verb, behind);
      assert.equal(error.code, "records-behind");
      assert.doesNotMatch(error.message, new RegExp(`\`mesh ${verb}\``));
      assert.match(error.message, /refuses .*\(records-behind\)/);
      assert.ok(error.message.includes(behind.message), "the controller's evidence and its way out are kept");
    }
  });

  it("another refusal of a step up runs names that step, in the words the person would type", () => {
    const error = refusedStep("module.register", { code: "unknown-seat", message: "no seat x" });
    assert.match(error.message, /`mesh module register` \(unknown-seat\)/);
    assert.equal(error.code, "unknown-seat");
  });

  it("R43: mesh up over records behind says the bus, the controller and the host agent are still running, and how to stop them (exit 1)", () => {
    const error = upOverRecordsBehind("/srv/mesh", behind);
    assert.equal(upExitCode(error), EXIT_REFUSED);
    assert.match(error.message, /\(records-behind\)/);
    assert.match(error.message, /the bus, the controller and the host agent are still running/);
    assert.match(error.message, /mesh down --dir \/srv\/mesh/);
    assert.doesNotMatch(error.message, /`mesh nodes`/);
  });
});

describe("mesh up: a step it cannot take", () => {
  let dir: string;
  before(() => { dir = mkdtempSync(join(tmpdir(), "mesh-up-step-")); });
  after(() => { rmSync(dir, { recursive: true, force: true }); });

  it("is said once as `mesh: up: ...`, as every verb's error reads, not `mesh: mesh up: ...`", async () => {
    const mesh = join(dir, "m");
    mkdirSync(mesh, { recursive: true });
    writeFileSync(join(mesh, "mesh.json"), JSON.stringify({
      genesisAddress: "tls://127.0.0.1:4222", fingerprint: "AB", operator: "admin", listenHost: "127.0.0.1", port: 4222, monitorPort: 8222, createdAt: "2026-12-01T00:00:00.000Z",
    }));
    let err = "";
    const io: CliIo = { stdout: { write: () => true }, stderr: { write: (s: string) => { err += s; return true; } }, env: {} };
    assert.equal(await runCli(["up", "--dir", mesh, "--cluster", "3"], io), EXIT_USAGE);
    assert.match(err, /^mesh: up: --cluster 3: /m, err);
    assert.doesNotMatch(err, /mesh: mesh up/);
  });
});

describe("mesh up: a controller that exited", () => {
  let dir: string;
  let gone: number;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "mesh-up-exit-"));
    gone = spawnSync(process.execPath, ["-e", ""]).pid;
  });
  after(() => { rmSync(dir, { recursive: true, force: true }); });

  it("is named with the last line of its log, the daemon's own reason, without the time stamp", () => {
    const mesh = join(dir, "exited");
    recordPid(mesh, "controller", gone);
    mkdirSync(join(mesh, "logs"), { recursive: true });
    writeFileSync(join(mesh, "logs", "controller.log"), [
      "2026-12-01T10:00:00.000Z controller: running (pid 1)",
      "2026-12-01T10:05:00.000Z controller: cannot start: CATALOGUE max_msgs is 3: it would erase commits (R47): set it to -1",
      "",
    ].join("\n"));
    const said = controllerExit(mesh);
    assert.ok(said !== undefined);
    assert.match(said, /controller: cannot start: CATALOGUE max_msgs is 3/);
    assert.doesNotMatch(said, /2026-12-01T10:05/);
    assert.ok(said.includes(join(mesh, "logs", "controller.log")), "names its log");
  });

  it("is not named while it runs, nor where mesh up never started one", () => {
    const running = join(dir, "running");
    recordPid(running, "controller", process.pid);
    assert.equal(controllerExit(running), undefined);
    assert.equal(controllerExit(join(dir, "never")), undefined);
  });
});

describe("mesh up --json when a step fails", () => {
  let dir: string;
  before(() => { dir = mkdtempSync(join(tmpdir(), "mesh-up-json-")); });
  after(() => { rmSync(dir, { recursive: true, force: true }); });

  it("prints one JSON object with ok false and the error's code, as every verb does, and never the password typed in the address (R3)", async () => {
    const { code, out } = await runMesh(["up", "--dir", join(dir, "m"), "--address", "tls://u:hunter2secret@h.example:4222", "--json"]);
    assert.equal(code, EXIT_USAGE);
    const printed = JSON.parse(out) as { ok: boolean; error: { code: string; message: string } };
    assert.equal(printed.ok, false);
    assert.equal(printed.error.code, "setup");
    assert.equal((printed as { v?: number }).v, VERBS_VERSION, "v, as every --json object up prints (found by a new-user trial)");
    assert.ok(!out.includes("hunter2secret"));
  });
});

/** A credential file of a bus nobody runs (port 1 on the loopback: refused at once). */
function unreachableCredential(dir: string): string {
  const file = join(dir, "elsewhere.json");
  writeFileSync(file, JSON.stringify({ address: "tls://127.0.0.1:1", user: "operator-ann", password: "unused" }));
  return file;
}

/** Runs `mesh <argv>` with `env`; its exit code and what it printed on stdout (stderr dropped). */
async function runMesh(argv: readonly string[], env: Record<string, string> = {}): Promise<{ code: number; out: string }> {
  let out = "";
  const io: CliIo = { stdout: { write: (s: string) => { out += s; } }, stderr: { write: () => true }, env };
  const code = await runCli(argv, io);
  return { code, out };
}

/** Runs `mesh status ... --json` with MESH_CREDENTIAL; its exit code and the object it printed. */
async function statusJson(args: readonly string[], credential: string): Promise<{ code: number; printed: { ok: boolean; v?: number; error?: { code: string; message: string } } }> {
  const { code, out } = await runMesh(["status", ...args, "--json"], { MESH_CREDENTIAL: credential, MESH_TIMEOUT_MS: "2000" });
  return { code, printed: JSON.parse(out) as { ok: boolean; v?: number; error?: { code: string; message: string } } };
}

describe("mesh status --json when nothing answers (found by a new-user trial)", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "mesh-status-v-"));
    mkdirSync(join(dir, "m"), { recursive: true });
    writeFileSync(join(dir, "m", "mesh.json"), JSON.stringify({
      genesisAddress: "tls://127.0.0.1:1", fingerprint: "AB", operator: "admin", listenHost: "127.0.0.1", port: 1, monitorPort: 8222, createdAt: "2026-12-01T00:00:00.000Z",
    }));
  });
  after(() => { rmSync(dir, { recursive: true, force: true }); });

  it("carries v, the verbs' contract version, as its ok shape does: every --json object status prints has it", async () => {
    const { code, printed } = await statusJson(["--dir", join(dir, "m")], unreachableCredential(dir));
    assert.equal(code, EXIT_REFUSED);
    assert.equal(printed.ok, false);
    assert.equal(printed.error?.code, "connection");
    assert.equal(printed.v, VERBS_VERSION);
  });
});

describe("mesh status --dir <a folder with no mesh> (found by a new-user trial)", () => {
  let dir: string;
  before(() => { dir = mkdtempSync(join(tmpdir(), "mesh-status-nomesh-")); });
  after(() => { rmSync(dir, { recursive: true, force: true }); });

  it("says that folder holds no mesh (no-mesh, naming it and the files it looked for) and exits 1, never the mesh of the default credential file", async () => {
    const empty = join(dir, "empty");
    mkdirSync(empty);
    const { code, printed } = await statusJson(["--dir", empty], unreachableCredential(dir));
    assert.equal(code, EXIT_REFUSED);
    assert.equal(printed.ok, false);
    assert.equal(printed.error?.code, "no-mesh");
    assert.ok(printed.error?.message.includes(meshPaths(empty).meshFile), printed.error?.message);
    assert.ok(printed.error?.message.includes(meshPaths(empty).operatorCredential), printed.error?.message);
  });

  it("with no --dir, in a folder holding no mesh and no credential to ask one, says the same (no-mesh, exit 1, v), not a usage error; and never offers a credential file that is not there (a new-user trial)", async () => {
    const nowhere = join(dir, "nowhere");
    mkdirSync(nowhere);
    const missing = join(dir, "no-such-credential.json");
    const before = process.cwd();
    process.chdir(nowhere);
    try {
      const { code, printed } = await statusJson([], missing);
      assert.equal(code, EXIT_REFUSED);
      assert.equal(printed.ok, false);
      assert.equal(printed.v, VERBS_VERSION);
      assert.equal(printed.error?.code, "no-mesh");
      assert.ok(printed.error?.message.includes(missing), printed.error?.message);
    } finally {
      process.chdir(before);
    }
    const empty = join(dir, "empty-too");
    mkdirSync(empty);
    const { printed } = await statusJson(["--dir", empty], missing);
    assert.equal(printed.error?.code, "no-mesh");
    assert.ok(!printed.error?.message.includes("leave --dir out"), printed.error?.message);
  });

  it("asks the mesh of the folder's own operator credential when it holds one (a copy of ~/.mesh), as it always did", async () => {
    const operatorOnly = join(dir, "operator-only");
    mkdirSync(operatorOnly);
    writeFileSync(meshPaths(operatorOnly).operatorCredential, JSON.stringify({ address: "tls://127.0.0.1:1", user: "operator-bob", password: "unused" }));
    const { code, printed } = await statusJson(["--dir", operatorOnly], unreachableCredential(dir));
    assert.equal(code, EXIT_REFUSED);
    assert.equal(printed.error?.code, "connection", "asked the bus of that credential");
    assert.ok(printed.error?.message.includes("operator-bob"), printed.error?.message);
  });
});

/**
 * Found by a new-user trial: `mesh up` waited out the push for an enrolled node whose host agent was
 * not running, then exited 0, where `mesh push` exits 1 for the same report. The mesh keeps running
 * either way: only the exit status and what is said change.
 */
describe("mesh up: a push that did not apply everywhere", () => {
  const summary: UpSummary = {
    mesh: { genesisAddress: "tls://127.0.0.1:4222", fingerprint: "AA:BB", dir: "/tmp/m" },
    nodes: [], seats: [], busUsers: [], applied: [], processes: { bus: 11, controller: 12, host: 13 },
  };
  const push = (nodes: PushReply["nodes"], extra: Partial<PushReply> = {}): PushReply => ({
    ok: true, v: VERBS_VERSION, pushId: "push-1", dryRun: false, recordsSequence: 9, nodes, leftOut: [], freshCredentials: [], freshProvisions: [],
    provisionsMinted: 0, raised: { created: 0, updated: 0, refused: [] }, timedOut: nodes.filter((n) => n.outcome === "timed-out").map((n) => n.node),
    rounds: 1, boundHit: false,
    counts: nodes.reduce<PushReply["counts"]>((all, n) => ({ ...all, [n.outcome]: (all[n.outcome] ?? 0) + 1 }), {}), ...extra,
  });
  const resultOf = (report: PushReply): UpResult => ({ paths: meshPaths("/tmp/m"), node: "alpha", summary, push: report });
  const memory = (json: boolean) => {
    const out: string[] = [];
    const err: string[] = [];
    return { ctx: { out: (l: string) => { out.push(l); }, err: (l: string) => { err.push(l); }, globals: { json, credential: "", timeoutMs: 1 } }, out, err };
  };
  const timedOut = push([
    { node: "alpha", outcome: "applied", digest: "a".repeat(64) },
    { node: "gamma", outcome: "timed-out", digest: "c".repeat(64), error: "no report yet of its first declaration: is its agent running? its log says" },
  ]);

  it("R32: exits as `mesh push` does for the same report (1 for a node that timed out), naming the node and the fix, and says the mesh still runs", () => {
    const { ctx, err } = memory(false);
    assert.equal(printUp(ctx, resultOf(timedOut), "/tmp/m"), EXIT_REFUSED);
    const said = err.join("\n");
    assert.match(said, /gamma/);
    assert.match(said, /agent/, "the fix: its host agent");
    assert.match(said, /mesh push --wait/, "the fix: push again once it runs");
    assert.match(said, /still runs|keeps running/);
    assert.doesNotMatch(said, /alpha applied/);
  });

  it("R32: every push outcome gives `mesh up` the exit code `mesh push` gives it", () => {
    const reports = [
      timedOut,
      push([{ node: "alpha", outcome: "applied", digest: "a".repeat(64) }]),
      push([{ node: "alpha", outcome: "unchanged", digest: "a".repeat(64) }]),
      push([{ node: "alpha", outcome: "failed", digest: "a".repeat(64), error: "disk full" }]),
      push([{ node: "alpha", outcome: "refused", refusal: { code: "compose-failed", message: "no" } }]),
      push([{ node: "alpha", outcome: "applied", digest: "a".repeat(64) }], { servers: [{ node: "alpha", server: "mesh-bus-2", ok: false, error: "down" }] }),
      push([{ node: "alpha", outcome: "applied", digest: "a".repeat(64) }], { userList: { code: "no-broker-holder", message: "nothing holds mesh-broker" } }),
      push([{ node: "alpha", outcome: "applied", digest: "a".repeat(64) }], { counts: { applied: 1, "timed-out": 3 } }),
    ];
    for (const report of reports) {
      const { ctx, err } = memory(false);
      const exit = printUp(ctx, resultOf(report), "/tmp/m");
      assert.equal(exit, exitOf(report), JSON.stringify(report));
      assert.equal(err.length > 0, exit !== EXIT_OK, `a line is said exactly when it does not exit 0: ${err.join("\n")}`);
    }
  });

  it("issue 29: ends with what to do next, each command as mesh is called here (`npx mesh` under npm start), stopping it last", () => {
    const { ctx, out } = memory(false);
    printUp(ctx, resultOf(push([{ node: "alpha", outcome: "applied", digest: "a".repeat(64) }])), ".mesh", "npx mesh");
    const said = out.join("\n");
    for (const verb of ["status", "nodes", "down"]) assert.match(said, new RegExp(`^  npx mesh ${verb}\\b`, "m"), verb);
    assert.doesNotMatch(said, /(^|[^x] )mesh down/m, "no bare `mesh`, which is not on the PATH of a clone");
    assert.ok(said.indexOf("npx mesh down") > said.indexOf("npx mesh nodes"), "stopping it is the last step");
  });

  it("issue 29: the next steps name a folder other than .mesh (--dir, and the operator's credential in it)", () => {
    const steps = nextSteps("mesh", "/srv/m", "/srv/m/operator.json").join("\n");
    assert.match(steps, /mesh status --dir \/srv\/m/);
    assert.match(steps, /mesh nodes --credential \/srv\/m\/operator\.json/);
    assert.match(steps, /mesh down --dir \/srv\/m/);
    assert.doesNotMatch(nextSteps("mesh", ".mesh", ".mesh/operator.json").join("\n"), /--dir|--credential/);
  });

  it("issue 29: mesh is called `npx mesh` under npm (npm start, npx), `mesh` otherwise", () => {
    assert.equal(meshInvocation({ npm_command: "start" }), "npx mesh");
    assert.equal(meshInvocation({ npm_command: "exec" }), "npx mesh");
    assert.equal(meshInvocation({}), "mesh");
  });

  it("with --json prints one object with ok, the contract's version v, the node, the summary and the push, and the same exit code", () => {
    const { ctx, out } = memory(true);
    assert.equal(printUp(ctx, resultOf(timedOut), "/tmp/m"), EXIT_REFUSED);
    const printed = JSON.parse(out.join("\n")) as { ok: boolean; v: number; node: string; push: { timedOut: string[] } };
    assert.equal(printed.ok, true);
    assert.equal(printed.v, VERBS_VERSION);
    assert.equal(printed.node, "alpha");
    assert.deepEqual(printed.push.timedOut, ["gamma"]);
  });

  it("its --help says what exit 1 means", async () => {
    const { code, out } = await runMesh(["up", "--help"]);
    assert.equal(code, EXIT_OK);
    assert.match(out.replace(/\s+/g, " "), /exit 1 when/);
  });
});

describe("mesh down --json", () => {
  let dir: string;
  before(() => { dir = mkdtempSync(join(tmpdir(), "mesh-down-json-")); });
  after(() => { rmSync(dir, { recursive: true, force: true }); });

  it("pretty-prints its one object as every other verb does, without v (it asks no controller)", async () => {
    const { code, out } = await runMesh(["down", "--dir", join(dir, "m"), "--json"]);
    assert.equal(code, EXIT_OK);
    assert.deepEqual(JSON.parse(out), { ok: true, stopped: [] });
    assert.equal(out, `${JSON.stringify({ ok: true, stopped: [] }, null, 2)}\n`);
  });
});

/**
 * Found by a new-user trial: `mesh up --address foo:5333`, a host that does not resolve, made the
 * mesh for that address and started its bus before the first dial failed. Checked before anything
 * is made: the folder stays as it was.
 */
describe("mesh up --address: a host this machine cannot resolve", () => {
  const failing = async (host: string) => { throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: "ENOTFOUND" }); };

  it("is refused naming the option, the host and the fix, and nothing was made", async () => {
    await assert.rejects(addressResolves("tls://foo:5333", "--address", failing), (error: Error) =>
      error instanceof UpError && error.message.includes("--address tls://foo:5333") && error.message.includes("foo does not resolve") && /nothing was made/.test(error.message));
  });

  it("a host that resolves, an IP address and a name of this machine pass", async () => {
    await addressResolves("tls://127.0.0.1:4222", "--address");
    await addressResolves("tls://localhost:4222", "--address");
    await addressResolves("[::1]", "--address", async () => ({ address: "::1", family: 6 }));
  });
});
