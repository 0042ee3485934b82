/**
 * Issue 29 against a real controller: repeating a change whose effect already holds answers
 * `unchanged`, exit 0, as `module register` of the same manifest does; `mesh version` names the
 * controller's verbs contract and the bus server's version.
 */
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startCommandMesh, type CommandMesh } from "../support/commandMesh.ts";
import { EXIT_OK } from "../../src/cli/context.ts";
import { VERBS_VERSION } from "../../src/contracts/verbs.ts";
import { newNodeKeyPair, newUserKey } from "../../src/crypto/secrets.ts";
import { runMesh, type CliRun } from "../support/cli.ts";

describe("mesh CLI, issue 29, over a real server", () => {
  let mesh: CommandMesh;
  let dir: string;
  let credentialFile: string;
  const mesh_ = (...argv: string[]): Promise<CliRun> => runMesh(argv, { MESH_CREDENTIAL: credentialFile });

  before(async () => {
    mesh = await startCommandMesh();
    dir = mkdtempSync(join(tmpdir(), "mesh-cli29-"));
    credentialFile = join(dir, "operator.json");
    writeFileSync(credentialFile, JSON.stringify({ address: mesh.server.url, user: "operator-ann", password: "operator-password" }));
    for (const node of ["alpha", "beta"]) {
      const enrolled = await mesh_("node", "enrol", node, "--key", newNodeKeyPair().publicKey, "--nkey", newUserKey().publicKey);
      assert.equal(enrolled.code, EXIT_OK, enrolled.err);
    }
    assert.equal((await mesh_("module", "register", "examples/broker.json")).code, EXIT_OK);
  });
  after(async () => {
    await mesh?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Runs a command twice: the first applies it, the second answers unchanged with exit 0. */
  async function twice(...argv: string[]): Promise<void> {
    const first = await mesh_(...argv, "--json");
    assert.equal(first.code, EXIT_OK, `${argv.join(" ")}: ${first.out}${first.err}`);
    assert.equal(first.json().unchanged, undefined, argv.join(" "));
    const again = await mesh_(...argv, "--json");
    assert.equal(again.code, EXIT_OK, `${argv.join(" ")} again: ${again.out}${again.err}`);
    assert.equal(again.json().unchanged, true, `${argv.join(" ")} again`);
    const readable = await mesh_(...argv);
    assert.equal(readable.code, EXIT_OK);
    assert.match(readable.out, /unchanged/, `${argv.join(" ")} says unchanged`);
  }

  it("assign, overlay place, seat handover and unassign repeated answer unchanged, exit 0", async () => {
    await twice("assign", "broker", "alpha");
    await twice("overlay", "place", "alpha", "--hub");
    await twice("overlay", "place", "beta");
    await twice("seat", "handover", "mesh-broker", "alpha", "beta");
    await twice("seat", "alias", "old-broker", "mesh-broker");
    await twice("assign", "broker", "alpha");
    await twice("unassign", "broker", "alpha");
  });

  it("mesh version names the controller's verbs contract and the bus server's version", async () => {
    const run = await mesh_("version", "-o", "json");
    assert.equal(run.code, EXIT_OK, run.err);
    const report = run.json() as { controller: { verbsContract: number } | null; bus: { server: string } | null };
    assert.deepEqual(report.controller, { verbsContract: VERBS_VERSION });
    assert.match(report.bus?.server ?? "", /^\d+\.\d+\.\d+/);
  });
});
