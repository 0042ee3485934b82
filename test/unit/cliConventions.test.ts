/**
 * Issue 29, the CLI's conventions as kubectl's: bare `mesh` is help, `mesh version`, `-o`, Examples
 * in every help, shell completion, tables that fit the terminal. No server.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { runCli } from "../../src/cli/run.ts";
import { EXIT_OK, type CliIo } from "../../src/cli/context.ts";
import { packageVersion, renderVersion } from "../../src/cli/version.ts";

function memoryIo(env: Record<string, string> = {}): CliIo & { out(): string; err(): string } {
  let out = "";
  let err = "";
  return { stdout: { write: (s: string) => { out += s; } }, stderr: { write: (s: string) => { err += s; } }, env, out: () => out, err: () => err };
}

/** An environment with no mesh: the credential file does not exist. */
const NO_MESH = { MESH_CREDENTIAL: join(tmpdir(), "mesh-no-such-credential.json") };

describe("bare mesh and mesh version (issue 29)", () => {
  it("bare mesh prints its help on stdout and exits 0", async () => {
    const io = memoryIo();
    assert.equal(await runCli([], io), EXIT_OK);
    assert.match(io.out(), /Usage: mesh/);
    assert.equal(io.err(), "");
  });

  it("mesh version, -v, -V and --version print the CLI's version and say the controller's and the bus's are unknown without a mesh, exit 0", async () => {
    for (const words of [["version"], ["-v"], ["-V"], ["--version"]]) {
      const io = memoryIo(NO_MESH);
      assert.equal(await runCli(words, io), EXIT_OK, `${words.join(" ")}: ${io.err()}`);
      const lines = io.out().trim().split("\n");
      assert.equal(lines[0], `mesh ${packageVersion()}`, words.join(" "));
      assert.match(lines[1]!, /^controller: unknown/, words.join(" "));
      assert.match(lines[2]!, /^bus: unknown/, words.join(" "));
    }
  });

  it("mesh version --json gives the versions as an object, null where unknown", async () => {
    const io = memoryIo(NO_MESH);
    assert.equal(await runCli(["version", "--json"], io), EXIT_OK, io.err());
    const report = JSON.parse(io.out()) as Record<string, unknown>;
    assert.equal(report.cli, packageVersion());
    assert.equal(report.controller, null);
    assert.equal(report.bus, null);
    assert.equal(typeof report.reason, "string");
  });

  it("mesh version names the controller's verbs contract and the bus server's version when reached", () => {
    assert.deepEqual(renderVersion({ cli: "1.0.0", controller: { verbsContract: 3 }, bus: { server: "2.9.10" } }), [
      "mesh 1.0.0", "controller: verbs contract v3", "bus: nats-server 2.9.10",
    ]);
  });
});
