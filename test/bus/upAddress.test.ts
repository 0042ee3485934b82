import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { up, chooseUpAddress, type UpResult } from "../../src/up/up.ts";
import { inProcessLauncher, type InProcessLauncher } from "../../src/up/daemon.ts";
import { stopAll } from "../../src/up/processes.ts";
import { renderSummary } from "../../src/up/summary.ts";
import { parseBusAddress } from "../../src/projections/index.ts";
import { runCli } from "../../src/cli/run.ts";
import { EXIT_OK, EXIT_USAGE, type CliIo } from "../../src/cli/context.ts";
import { operatorConnection, operatorUser } from "../../src/up/up.ts";
import { askAs } from "../support/client.ts";
import { progressSubject } from "../../src/names.ts";

/**
 * `mesh up` on a machine where its preferred port is taken (Debian's own nats-server service holds
 * 4222): without --address the bus takes a free port and says so; an explicit --address that is
 * taken fails with one line naming --address.
 */

function memoryIo(env: Record<string, string> = {}, isTTY = false): CliIo & { out(): string; err(): string } {
  let out = "";
  let err = "";
  return { stdout: { write: (s: string) => { out += s; } }, stderr: { write: (s: string) => { err += s; }, isTTY }, env, out: () => out, err: () => err };
}

describe("mesh up when the port is taken", () => {
  let root: string;
  let squatter: Server;
  let taken: number;
  let launcher: InProcessLauncher;
  let result: UpResult;
  const logs: string[] = [];

  before(async () => {
    root = mkdtempSync(join(tmpdir(), "mesh-up-address-"));
    squatter = createServer();
    await new Promise<void>((resolve) => squatter.listen(0, "127.0.0.1", resolve));
    taken = (squatter.address() as { port: number }).port;
    launcher = inProcessLauncher((line) => logs.push(line));
    const log = (line: string) => { logs.push(line); };
    result = await up({ dir: join(root, "default"), log, launcher, preferredPort: taken, node: "alpha", detachBus: false, timeoutMs: 30_000 });
  });
  after(async () => {
    await launcher?.stop();
    if (root) await stopAll(join(root, "default"));
    await new Promise<void>((resolve) => (squatter ? squatter.close(() => resolve()) : resolve()));
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it("R8: chooseUpAddress keeps a free preferred port and replaces a taken one", async () => {
    const fallback = await chooseUpAddress(taken);
    assert.equal(fallback.fallback, true);
    assert.notEqual(parseBusAddress(fallback.brokerAddress).port, taken);
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const port = (probe.address() as { port: number }).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const kept = await chooseUpAddress(port);
    assert.deepEqual([kept.fallback, parseBusAddress(kept.brokerAddress).port], [false, port]);
  });

  it("R8: without --address, mesh up takes a free port when the preferred one is taken, and says which", () => {
    const port = parseBusAddress(result.summary.mesh.genesisAddress).port;
    assert.notEqual(port, taken);
    assert.ok(logs.some((l) => l.includes(`port ${taken}`) && l.includes(result.summary.mesh.genesisAddress)), logs.join("\n"));
    assert.ok(renderSummary(result.summary)[0]!.includes(result.summary.mesh.genesisAddress));
    assert.ok(result.summary.applied.every((a) => a.ok), "the mesh came up on the other port");
  });

  it("R3: an --address with a user and password inside is refused without printing the password (mesh up and mesh genesis)", async () => {
    for (const verb of ["up", "genesis"]) {
      const dir = join(root, `secret-${verb}`);
      const io = memoryIo();
      assert.equal(await runCli([verb, "--dir", dir, "--address", "tls://u:hunter2secret@h.example:4222"], io), EXIT_USAGE, io.err());
      assert.ok(io.err().includes("--address"), io.err());
      assert.ok(!io.out().includes("hunter2secret") && !io.err().includes("hunter2secret"), io.err());
      assert.ok(!existsSync(join(dir, "mesh.json")), "no mesh was made");
    }
  });

  it("R8: an explicit --address that is taken fails with one line naming --address (mesh up and mesh genesis)", async () => {
    for (const verb of ["up", "genesis"]) {
      const dir = join(root, `explicit-${verb}`);
      const io = memoryIo();
      assert.equal(await runCli([verb, "--dir", dir, "--address", `tls://127.0.0.1:${taken}`], io), EXIT_USAGE, io.err());
      const lines = io.err().trim().split("\n");
      assert.ok(lines.at(-1)!.includes("--address") && !io.err().includes("MESH_BROKER_ADDRESS"), io.err());
      assert.ok(!existsSync(join(dir, "mesh.json")), "no mesh was made");
    }
  });

  it("R33: mesh push shows the controller's progress lines on stderr on a terminal or with --progress, never on stdout", async () => {
    const env = { MESH_CREDENTIAL: result.paths.operatorCredential, MESH_TIMEOUT_MS: "20000" };
    const asked = memoryIo(env);
    assert.equal(await runCli(["push", "alpha", "--wait", "--json", "--progress"], asked), EXIT_OK, asked.err());
    assert.ok(JSON.parse(asked.out()).ok, "stdout is the reply JSON only");
    assert.match(asked.err(), /^mesh push: sent 1 of 1 declaration/m);
    const terminal = memoryIo(env, true);
    assert.equal(await runCli(["push", "alpha"], terminal), EXIT_OK, terminal.err());
    assert.match(terminal.err(), /^mesh push: composing/m);
    const quiet = memoryIo(env, true);
    assert.equal(await runCli(["push", "alpha", "--json"], quiet), EXIT_OK, quiet.err());
    assert.equal(quiet.err(), "", "--json on a terminal prints no progress");
  });

  it("R33: the controller refuses a progress subject outside the asker's own inbox", async () => {
    const nc = await operatorConnection(result.paths);
    try {
      const reply = await askAs(nc, operatorUser(result.paths), "push", { dryRun: true, progressSubject: progressSubject("node-alpha", "x") }, 20_000);
      assert.equal(reply.ok, false);
      assert.equal(!reply.ok && reply.error.code, "invalid-request");
    } finally {
      await nc.close();
    }
  });
});
