/**
 * Issue 29, `mesh module retire` against a real controller through the CLI: refused while the
 * module is assigned (naming the node and the unassign to run), then the module leaves the
 * catalogue and its credential is revoked, its history stays; a repeat answers unchanged, exit 0.
 */
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startCommandMesh, type CommandMesh } from "../support/commandMesh.ts";
import { EXIT_OK, EXIT_REFUSED } from "../../src/cli/context.ts";
import { newNodeKeyPair, newUserKey } from "../../src/crypto/secrets.ts";
import { runMesh, type CliRun } from "../support/cli.ts";

describe("mesh module retire over a real server", () => {
  let mesh: CommandMesh;
  let dir: string;
  let credentialFile: string;
  let manifest: string;
  const mesh_ = (...argv: string[]): Promise<CliRun> => runMesh(argv, { MESH_CREDENTIAL: credentialFile });

  before(async () => {
    mesh = await startCommandMesh();
    dir = mkdtempSync(join(tmpdir(), "mesh-retire-"));
    credentialFile = join(dir, "operator.json");
    writeFileSync(credentialFile, JSON.stringify({ address: mesh.server.url, user: "operator-ann", password: "operator-password" }));
    manifest = join(dir, "echo.json");
    writeFileSync(manifest, JSON.stringify({ name: "echo", version: "1.0.0", seats: { echo: { protocol: "echo/1" } }, claims: ["echo"] }));
    const enrolled = await mesh_("node", "enrol", "alpha", "--key", newNodeKeyPair().publicKey, "--nkey", newUserKey().publicKey);
    assert.equal(enrolled.code, EXIT_OK, enrolled.err);
    for (const argv of [["module", "register", manifest], ["module", "issue", "echo"], ["assign", "echo", "alpha"]]) {
      const run = await mesh_(...argv);
      assert.equal(run.code, EXIT_OK, `${argv.join(" ")}: ${run.err}`);
    }
  });
  after(async () => {
    await mesh?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("R66: refused while assigned, naming the unassign; then retired with its credential revoked, history kept; again unchanged", async () => {
    const refused = await mesh_("module", "retire", "echo");
    assert.equal(refused.code, EXIT_REFUSED);
    assert.match(refused.err, /refused \(module-assigned\)/);
    assert.match(refused.err, /mesh unassign echo alpha/);

    assert.equal((await mesh_("unassign", "echo", "alpha")).code, EXIT_OK);
    const retired = await mesh_("module", "unregister", "echo", "--json");
    assert.equal(retired.code, EXIT_OK, retired.err);
    assert.deepEqual({ ...retired.json(), commandId: undefined, sequence: undefined },
      { ok: true, v: retired.json().v, commandId: undefined, duplicate: false, sequence: undefined, module: "echo", version: "1.0.0", credentialRevoked: true });

    const modules = await mesh_("modules", "--json");
    assert.deepEqual((modules.json().modules as Array<{ name: string }>).map((m) => m.name), []);
    const credentials = await mesh_("credentials", "--json");
    assert.ok(!(credentials.json().credentials as Array<{ user: string }>).some((c) => c.user === "module-echo"), credentials.out);
    const history = await mesh_("history", "module", "echo");
    assert.equal(history.code, EXIT_OK, history.err);
    assert.match(history.out, /module echo version 1\.0\.0 retired/);

    const again = await mesh_("module", "retire", "echo");
    assert.equal(again.code, EXIT_OK, again.err);
    assert.match(again.out, /unchanged/);
    const ghost = await mesh_("module", "remove", "ghost", "--json");
    assert.equal(ghost.code, EXIT_REFUSED);
    assert.equal((ghost.json().error as { code: string }).code, "unknown-module");
  });
});
