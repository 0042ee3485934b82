/**
 * Issue 12, the CLI against a real controller: not found is not success, --dry-run appends
 * nothing, `module register a b c` reports each, `explain <kind> <name>` lists grants, and
 * `mesh status` of a stopped mesh has one --json shape and a non-zero exit.
 */
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startCommandMesh, type CommandMesh } from "../support/commandMesh.ts";
import { runCli } from "../../src/cli/run.ts";
import { EXIT_OK, EXIT_REFUSED, type CliIo } from "../../src/cli/context.ts";
import { newNodeKeyPair, newUserKey } from "../../src/crypto/secrets.ts";
import { pidFile } from "../../src/up/up.ts";
import { PROCESSES, markStartedByUp, recordPid, stopAll } from "../../src/up/processes.ts";
import { runMesh, type CliRun } from "../support/cli.ts";

const OPERATOR = "operator-ann";
type Run = CliRun;

describe("mesh CLI, issue 12, over a real server", () => {
  let mesh: CommandMesh;
  let dir: string;
  let credentialFile: string;

  before(async () => {
    mesh = await startCommandMesh();
    dir = mkdtempSync(join(tmpdir(), "mesh-cli12-"));
    credentialFile = join(dir, "operator.json");
    writeFileSync(credentialFile, JSON.stringify({ address: mesh.server.url, user: OPERATOR, password: "operator-password" }));
    const enrolled = await mesh_("node", "enrol", "alpha", "--key", newNodeKeyPair().publicKey, "--nkey", newUserKey().publicKey);
    assert.equal(enrolled.code, EXIT_OK, enrolled.err);
    const registered = await mesh_("module", "register", "examples/broker.json");
    assert.equal(registered.code, EXIT_OK, registered.err);
  });
  after(async () => {
    await mesh?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const mesh_ = (...argv: string[]): Promise<Run> => runMesh(argv, { MESH_CREDENTIAL: credentialFile });

  function manifestFile(name: string, manifest: unknown): string {
    const file = join(dir, `${name}.json`);
    writeFileSync(file, JSON.stringify(manifest));
    return file;
  }

  it("not found is not success: history of a node nobody enrolled exits 1 with not-found", async () => {
    const run = await mesh_("history", "node", "nosuch", "--json");
    assert.equal(run.code, EXIT_REFUSED, run.out);
    assert.equal((run.json().error as { code: string }).code, "not-found");
    const readable = await mesh_("history", "node", "nosuch");
    assert.equal(readable.code, EXIT_REFUSED);
    assert.match(readable.err, /not-found/);
    assert.equal((await mesh_("history", "node", "alpha")).code, EXIT_OK, "a known node's history is found");
  });

  it("not found is not success: explain of a module nobody registered exits 1 with not-found, not a denial", async () => {
    const run = await mesh_("explain", "module", "nosuch", "pub", "mesh.x", "--json");
    assert.equal(run.code, EXIT_REFUSED, run.out);
    const error = run.json().error as { code: string; field: string };
    assert.equal(error.code, "not-found");
    assert.equal(error.field, "name");
    assert.equal((await mesh_("explain", "module", "nosuch", "--json")).code, EXIT_REFUSED, "and without a subject");
  });

  it("explain <kind> <name> without a subject lists that principal's grants, each with why", async () => {
    const run = await mesh_("explain", "module", "broker", "--json");
    assert.equal(run.code, EXIT_OK, run.err);
    const grants = run.json().grants as Array<{ direction: string; subject: string; because: string }>;
    assert.ok(Array.isArray(grants) && grants.length > 0, run.out);
    for (const grant of grants) assert.ok(grant.because.length > 0 && (grant.direction === "pub" || grant.direction === "sub"), JSON.stringify(grant));
    const readable = await mesh_("explain", "module", "broker");
    assert.equal(readable.code, EXIT_OK, readable.err);
    assert.match(readable.out, /DIRECTION\s+SUBJECT\s+BECAUSE/);
  });

  it("--dry-run on a command answers the events it would append and appends nothing", async () => {
    const before = await mesh.lastSequence();
    const run = await mesh_("node", "enrol", "gamma", "--key", newNodeKeyPair().publicKey, "--nkey", newUserKey().publicKey, "--dry-run", "--json");
    assert.equal(run.code, EXIT_OK, run.err);
    const reply = run.json();
    assert.equal(reply.dryRun, true);
    const events = reply.events as Array<Record<string, unknown>>;
    assert.ok(events.some((e) => e.type === "NodeEnrolled"), run.out);
    assert.doesNotMatch(run.out, /"(hash|password|sealed)"/, "no secret in a dry run (R3)");
    assert.equal(await mesh.lastSequence(), before, "the CATALOGUE stream's last sequence did not move");
    const readable = await mesh_("assign", "broker", "alpha", "--dry-run");
    assert.equal(readable.code, EXIT_OK, readable.err);
    assert.match(readable.out, /would append 1 event.*nothing was written/);
    assert.equal(await mesh.lastSequence(), before, "still unmoved");
    const nodes = (await mesh_("nodes", "--json")).json().nodes as Array<{ name: string }>;
    assert.ok(!nodes.some((n) => n.name === "gamma"), "the dry-run node is not enrolled");
  });

  it("--dry-run of a command that would be refused answers the refusal, exit 1, nothing appended", async () => {
    const before = await mesh.lastSequence();
    const run = await mesh_("assign", "nosuch", "alpha", "--dry-run", "--json");
    assert.equal(run.code, EXIT_REFUSED, run.out);
    assert.equal(typeof (run.json().error as { code: string }).code, "string");
    assert.equal(await mesh.lastSequence(), before);
  });

  it("module register a b c tries each and reports each: registered, refused, registered; exit 1", async () => {
    const a = manifestFile("mod-a", { name: "mod-a", version: "1" });
    const b = manifestFile("mod-b", { name: "mod-b", version: "1", claims: ["mesh-nowhere"] });
    const c = manifestFile("mod-c", { name: "mod-c", version: "1" });
    const run = await mesh_("module", "register", a, b, c);
    assert.equal(run.code, EXIT_REFUSED, run.err);
    assert.match(run.out, /registered mod-a 1/);
    assert.match(run.out, /registered mod-c 1/);
    assert.match(run.err, /refused 1 of 3 \(.*mod-b\.json\)/);
    const json = await mesh_("module", "register", a, b, c, "--json");
    assert.equal(json.code, EXIT_REFUSED);
    const printed = json.json();
    assert.equal(printed.ok, false);
    assert.equal((printed.error as { code: string }).code, "unknown-seat");
    assert.deepEqual((printed.results as Array<{ file: string; reply: { ok: boolean } }>).map((r) => [r.file, r.reply.ok]), [[a, true], [b, false], [c, true]]);
    const one = await mesh_("module", "register", a, "--json");
    assert.ok(Array.isArray(one.json().results), "one manifest: the same shape as several");
  });

  it("where --json lists the placed nodes as an array of objects", async () => {
    const placed = await mesh_("overlay", "place", "alpha", "--hub");
    assert.equal(placed.code, EXIT_OK, placed.err);
    const run = await mesh_("where", "--json");
    assert.deepEqual((run.json().placed as Array<{ node: string }>).map((p) => p.node), ["alpha"]);
  });
});

describe("mesh status of a stopped mesh", () => {
  let dir: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "mesh-status-"));
    // --systemd leaves the bus stopped: a mesh with nothing running.
    const io: CliIo = { stdout: { write: () => true }, stderr: { write: () => true }, env: {} };
    assert.equal(await runCli(["genesis", "--dir", join(dir, "m"), "--address", "tls://127.0.0.1:4999", "--systemd"], io), EXIT_OK);
    // As `mesh up` then `mesh down` leave it: `mesh up`'s mark, and no pid file (down removes them).
    const gone = spawnSync(process.execPath, ["-e", ""]).pid;
    mkdirSync(join(dir, "m", "run"), { recursive: true });
    for (const name of PROCESSES) writeFileSync(pidFile(join(dir, "m"), name), `${gone}\n`);
    markStartedByUp(join(dir, "m"));
    await stopAll(join(dir, "m"));
  });
  after(() => { if (dir) rmSync(dir, { recursive: true, force: true }); });

  it("exits 1 with everything stopped; --json has the same keys as when it runs, processes as a list, error not-running", async () => {
    let out = "";
    const io: CliIo = { stdout: { write: (s: string) => { out += s; } }, stderr: { write: () => true }, env: {} };
    assert.equal(await runCli(["status", "--dir", join(dir, "m"), "--json"], io), EXIT_REFUSED);
    const printed = JSON.parse(out) as Record<string, unknown>;
    assert.equal(printed.ok, false);
    assert.equal((printed.error as { code: string }).code, "not-running");
    assert.deepEqual(Object.keys(printed).filter((k) => k !== "error").sort(), ["dir", "genesisAddress", "ok", "processes", "summary", "v"]);
    assert.equal(printed.summary, null);
    assert.deepEqual((printed.processes as Array<{ name: string; running: boolean }>).map((p) => p.running), PROCESSES.map(() => false));
  });
});

describe("mesh status of a mesh whose controller exited while its bus runs", () => {
  let dir: string;
  let bus: ChildProcess | undefined;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "mesh-status-"));
    const io: CliIo = { stdout: { write: () => true }, stderr: { write: () => true }, env: {} };
    assert.equal(await runCli(["genesis", "--dir", join(dir, "m"), "--address", "tls://127.0.0.1:4999", "--systemd"], io), EXIT_OK);
    // As `mesh up` leaves it when the controller could not start: the bus's pid alive (a stand-in
    // process), the controller's recorded and gone, its log ending with why.
    bus = spawn(process.execPath, ["-e", "setTimeout(() => undefined, 600_000)"], { stdio: "ignore" });
    markStartedByUp(join(dir, "m"));
    recordPid(join(dir, "m"), "bus", bus.pid!);
    recordPid(join(dir, "m"), "controller", spawnSync(process.execPath, ["-e", ""]).pid);
    mkdirSync(join(dir, "m", "logs"), { recursive: true });
    writeFileSync(join(dir, "m", "logs", "controller.log"), "2026-12-01T10:05:00.000Z controller: cannot start: CATALOGUE max_msgs is 3: set it to -1\n");
  });
  after(() => {
    bus?.kill("SIGKILL");
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("exits 1 naming the controller and its last log line (controller-not-running), not a stopped mesh", async () => {
    let out = "";
    const io: CliIo = { stdout: { write: (s: string) => { out += s; } }, stderr: { write: () => true }, env: {} };
    assert.equal(await runCli(["status", "--dir", join(dir, "m"), "--json"], io), EXIT_REFUSED);
    const printed = JSON.parse(out) as { ok: boolean; error: { code: string; message: string }; processes: Array<{ name: string; running: boolean }> };
    assert.equal(printed.ok, false);
    assert.equal(printed.error.code, "controller-not-running");
    assert.match(printed.error.message, /max_msgs is 3/);
    assert.deepEqual(printed.processes.map((p) => [p.name, p.running]), [["bus", true], ["controller", false], ["host", false], ["supervisor", false]]);
  });
});
