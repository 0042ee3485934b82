/**
 * Issue 29: the example manifests travel with the package, and `mesh examples` lists, prints and
 * writes them, so a walkthrough's `mesh module register examples/broker.json` runs without a clone.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCli } from "../../src/cli/run.ts";
import { EXIT_OK, EXIT_USAGE, type CliIo } from "../../src/cli/context.ts";

function memoryIo(): CliIo & { out(): string; err(): string } {
  let out = "";
  let err = "";
  return { stdout: { write: (s: string) => { out += s; } }, stderr: { write: (s: string) => { err += s; } }, env: {}, out: () => out, err: () => err };
}

const SHIPPED = readdirSync("examples").filter((f) => f.endsWith(".json")).map((f) => f.slice(0, -5)).sort();

describe("mesh examples (issue 29)", () => {
  it("package.json ships examples/", () => {
    const files = (JSON.parse(readFileSync("package.json", "utf8")) as { files: string[] }).files;
    assert.ok(files.includes("examples/"), files.join(", "));
  });

  it("lists every example manifest the package ships, with its module, as a table and as data", async () => {
    const io = memoryIo();
    assert.equal(await runCli(["examples"], io), EXIT_OK, io.err());
    for (const name of SHIPPED) assert.match(io.out(), new RegExp(`^${name}\\s`, "m"));
    const json = memoryIo();
    assert.equal(await runCli(["examples", "-o", "json"], json), EXIT_OK);
    assert.deepEqual((JSON.parse(json.out()) as { examples: Array<{ name: string }> }).examples.map((e) => e.name), SHIPPED);
  });

  it("show prints one manifest as shipped", async () => {
    const io = memoryIo();
    assert.equal(await runCli(["examples", "show", "broker"], io), EXIT_OK, io.err());
    assert.equal(io.out(), readFileSync("examples/broker.json", "utf8"));
  });

  it("--write copies every example into a folder, made when missing", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mesh-examples-"));
    try {
      const io = memoryIo();
      assert.equal(await runCli(["examples", "--write", join(dir, "examples")], io), EXIT_OK, io.err());
      assert.deepEqual(readdirSync(join(dir, "examples")).sort(), SHIPPED.map((n) => `${n}.json`));
      assert.equal(readFileSync(join(dir, "examples", "broker.json"), "utf8"), readFileSync("examples/broker.json", "utf8"));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("an example that is none is a usage error naming the closest and every example", async () => {
    const io = memoryIo();
    assert.equal(await runCli(["examples", "show", "brokr"], io), EXIT_USAGE);
    assert.match(io.err(), /mesh: examples show: <name>: no example "brokr" \(did you mean broker\?\)/);
    for (const name of SHIPPED) assert.match(io.err(), new RegExp(name));
  });
});
