/**
 * Issue 29 against a real controller: `mesh get` and `mesh describe` read what the records hold,
 * and `--watch` draws a list again when a command lands, heard on the bus, not polled; Ctrl-C (the
 * io's interrupt, as src/cli/main.ts wires SIGINT) ends a watch with exit 0.
 */
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freshControllerSuite } from "../support/controller.ts";
import { waitFor } from "../support/natsServer.ts";
import { runMesh, type CliRun } from "../support/cli.ts";
import { runCli } from "../../src/cli/run.ts";
import { EXIT_OK, EXIT_REFUSED, EXIT_USAGE, type CliIo } from "../../src/cli/context.ts";
import { newNodeKeyPair, newUserKey } from "../../src/crypto/secrets.ts";

describe("mesh get, describe and --watch over a real controller (issue 29)", () => {
  const suite = freshControllerSuite();
  let dir: string;
  let credentialFile: string;
  const mesh = (...argv: string[]): Promise<CliRun> => runMesh(argv, { MESH_CREDENTIAL: credentialFile });

  before(async () => {
    await suite.fixture.start();
    dir = mkdtempSync(join(tmpdir(), "mesh-cliget-"));
    credentialFile = join(dir, "operator.json");
    writeFileSync(credentialFile, JSON.stringify({ address: suite.server.url, user: "operator-test", password: "unused" }));
    const enrolled = await mesh("node", "enrol", "alpha", "--key", newNodeKeyPair().publicKey, "--nkey", newUserKey().publicKey);
    assert.equal(enrolled.code, EXIT_OK, enrolled.err);
    const registered = await mesh("module", "register", "examples/broker.json");
    assert.equal(registered.code, EXIT_OK, registered.err);
  });
  after(() => { if (dir) rmSync(dir, { recursive: true, force: true }); });

  it("get lists a kind and shows one item, as a table, by name and as data", async () => {
    const all = await mesh("get", "nodes");
    assert.equal(all.code, EXIT_OK, all.err);
    assert.match(all.out, /^NAME\s+OVERLAY/);
    assert.match(all.out, /^alpha\s/m);
    const names = await mesh("get", "module", "-o", "name");
    assert.deepEqual(names.out.trim().split("\n"), ["module/broker"]);
    const one = await mesh("get", "seat", "mesh-broker", "-o", "json");
    assert.equal(one.code, EXIT_OK, one.err);
    assert.equal((one.json().seat as { declaredBy: string }).declaredBy, "broker");
    const credentials = await mesh("get", "credentials", "-o", "json");
    assert.ok((credentials.json().credentials as unknown[]).length > 0);
  });

  it("a name that is none is not-found naming the closest (exit 1); a kind that is none exits 2", async () => {
    const missing = await mesh("get", "node", "alhpa", "-o", "json");
    assert.equal(missing.code, EXIT_REFUSED);
    assert.equal((missing.json().error as { code: string }).code, "not-found");
    assert.match(missing.err, /did you mean alpha\?/);
    const kind = await mesh("describe", "widget", "x");
    assert.equal(kind.code, EXIT_USAGE);
    assert.match(kind.err, /one of node, module, seat, credential, push/);
  });

  it("R72: mesh logs of a module that is none is not-found naming the closest (exit 1, as get's), found by a new-user trial", async () => {
    const missing = await mesh("logs", "brokr");
    assert.equal(missing.code, EXIT_REFUSED, missing.err);
    assert.match(missing.err, /no module "brokr" \(did you mean broker\?\)/);
    const data = await mesh("logs", "brokr", "-o", "json");
    assert.equal(data.code, EXIT_REFUSED);
    assert.equal(data.json().code, "not-found");
  });

  it("R74: mesh tool call of a module or tool that is none is not-found naming the closest (exit 1), not a bus refusal, found by a new-user trial", async () => {
    const module = await mesh("tool", "call", "brokr", "status", "--timeout", "2000");
    assert.equal(module.code, EXIT_REFUSED, module.err);
    assert.match(module.err, /no module "brokr" \(did you mean broker\?\)/);
    const tool = await mesh("tool", "call", "broker", "status", "--timeout", "2000", "-o", "json");
    assert.equal(tool.code, EXIT_REFUSED, tool.err);
    assert.equal((tool.json().error as { code: string }).code, "not-found");
    assert.match(tool.err, /module broker offers no tool "status": it offers no tools/);
  });

  it("describe shows a node in full, its last report and its newest events", async () => {
    suite.fixture.report("alpha", "d".repeat(64));
    await waitFor(async () => (await mesh("get", "node", "alpha", "-o", "json")).json().node !== undefined
      && ((await mesh("get", "node", "alpha", "-o", "json")).json().node as { lastReport: unknown }).lastReport !== null, { name: "alpha's report stored", timeoutMs: 10_000, intervalMs: 100 });
    const run = await mesh("describe", "node", "alpha");
    assert.equal(run.code, EXIT_OK, run.err);
    assert.match(run.out, /^Node alpha$/m);
    assert.match(run.out, /^Last report:\n {2}Digest: +d{64}$/m);
    assert.match(run.out, /node alpha enrolled/);
    const data = await mesh("describe", "module", "broker", "-o", "json");
    assert.equal((data.json().module as { name: string }).name, "broker");
    assert.ok((data.json().history as unknown[]).length >= 1);
  });

  it("--watch draws the list again within 1 s of an assign, heard on the bus; Ctrl-C ends it with exit 0", async () => {
    let out = "";
    let stop: (() => void) | undefined;
    const io: CliIo = {
      stdout: { write: (s: string) => { out += s; } },
      stderr: { write: () => true },
      env: { MESH_CREDENTIAL: credentialFile },
      onInterrupt: (s) => { stop = s; return () => { stop = undefined; }; },
    };
    const watching = runCli(["modules", "--watch", "-o", "json"], io);
    try {
      await waitFor(() => stop !== undefined && out.includes('"broker"'), { name: "the first drawing", timeoutMs: 10_000 });
      assert.doesNotMatch(out, /"alpha"/);
      const assigned = await mesh("assign", "broker", "alpha");
      assert.equal(assigned.code, EXIT_OK, assigned.err);
      await waitFor(() => /"nodes": \[\s*"alpha"\s*\]/.test(out), { name: "a drawing with broker on alpha", timeoutMs: 1_000 });
    } finally {
      stop?.();
    }
    assert.equal(await watching, EXIT_OK);
  });
});
