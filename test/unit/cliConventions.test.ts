/**
 * Issue 29, the CLI's conventions as kubectl's: bare `mesh` is help, `mesh version`, `-o`, Examples
 * in every help, shell completion, tables that fit the terminal. No server.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { runCli } from "../../src/cli/run.ts";
import { parse as parseYaml } from "yaml";
import { EXIT_OK, EXIT_USAGE, type CliContext, type CliIo } from "../../src/cli/context.ts";
import { CLI_VERBS, report } from "../../src/cli/verbs.ts";
import { nameLines } from "../../src/cli/output.ts";
import { renderList, table } from "../../src/cli/render.ts";
import { HOST_DIR, LOCAL_NODE_FILE } from "../../src/up/up.ts";
import { renderVersion } from "../../src/cli/version.ts";
import { packageVersion } from "../../src/files/packageFiles.ts";

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

describe("-o json|yaml|wide|name (issue 29)", () => {
  it("every verb that takes --json takes -o, --output too, and --help says so", async () => {
    for (const verb of CLI_VERBS.filter((v) => (v.globals ?? []).includes("json"))) {
      const io = memoryIo();
      assert.equal(await runCli([...verb.path, "--help"], io), EXIT_OK);
      assert.match(io.out(), /-o, --output <format>/, verb.path.join(" "));
    }
  });

  it("-o json is --json: mesh version -o json gives an object", async () => {
    const io = memoryIo(NO_MESH);
    assert.equal(await runCli(["version", "-o", "json"], io), EXIT_OK, io.err());
    assert.equal((JSON.parse(io.out()) as { cli: string }).cli, packageVersion());
  });

  it("-o yaml prints the same object as YAML, failures too", async () => {
    const io = memoryIo(NO_MESH);
    assert.equal(await runCli(["version", "-o", "yaml"], io), EXIT_OK, io.err());
    assert.equal((parseYaml(io.out()) as { cli: string }).cli, packageVersion());
    const failed = memoryIo(NO_MESH);
    assert.equal(await runCli(["where", "-o", "yaml"], failed), EXIT_USAGE);
    assert.deepEqual((parseYaml(failed.out()) as { ok: boolean; error: { code: string } }).ok, false);
  });

  it("-o takes only the formats it names, and --json with another -o is a usage error", async () => {
    const bad = memoryIo(NO_MESH);
    assert.equal(await runCli(["version", "-o", "xml"], bad), EXIT_USAGE);
    assert.match(bad.err(), /--output/);
    const both = memoryIo(NO_MESH);
    assert.equal(await runCli(["version", "--json", "-o", "yaml"], both), EXIT_USAGE);
    assert.match(both.err(), /--json/);
  });

  it("-o name prints one kind/name per line of a list reply, and the subject of a command's", () => {
    assert.deepEqual(nameLines({ ok: true, nodes: [{ name: "alpha" }, { name: "beta" }] }), ["node/alpha", "node/beta"]);
    assert.deepEqual(nameLines({ ok: true, placed: [{ node: "alpha", overlayName: "x" }] }), ["node/alpha"]);
    assert.deepEqual(nameLines({ ok: true, module: "echo", node: "alpha", nodes: ["alpha"] }), ["module/echo"]);
    // module register's results: each names the module its reply registered.
    assert.deepEqual(nameLines({ ok: true, results: [{ file: "a/module.json", reply: { ok: true, module: "echo" } }] }), ["module/echo"]);
  });

  it("a bus verb's reply goes through the one renderer: -o name and -o yaml on report()", () => {
    const lines: string[] = [];
    const ctx = { globals: { json: true, output: "name", credential: "", timeoutMs: 1 }, out: (l: string) => lines.push(l), err: () => undefined } as unknown as CliContext;
    assert.equal(report(ctx, "nodes", { ok: true, v: 1, asOf: 1, nodes: [{ name: "alpha" }] } as never), EXIT_OK);
    assert.deepEqual(lines, ["node/alpha"]);
    const yaml: string[] = [];
    report({ ...ctx, globals: { ...ctx.globals, output: "yaml" }, out: (l: string) => yaml.push(l) }, "nodes", { ok: true, v: 1, asOf: 1, nodes: [{ name: "alpha" }] } as never);
    assert.deepEqual((parseYaml(yaml.join("\n")) as { nodes: unknown[] }).nodes, [{ name: "alpha" }]);
  });
});

describe("Examples in every verb's help (issue 29)", () => {
  it("every verb's --help ends with an Examples section whose lines run that verb", async () => {
    for (const verb of CLI_VERBS) {
      const io = memoryIo();
      assert.equal(await runCli([...verb.path, "--help"], io), EXIT_OK);
      const examples = io.out().split("\nExamples:\n")[1];
      assert.ok(examples !== undefined, `mesh ${verb.path.join(" ")} --help has Examples:\n${io.out()}`);
      const runs = examples.split("\n").filter((l) => l.startsWith("  $ "));
      assert.ok(runs.length > 0, `mesh ${verb.path.join(" ")}: at least one example`);
      for (const line of runs) assert.ok(line.startsWith(`  $ mesh ${verb.path.join(" ")}`), `mesh ${verb.path.join(" ")}: ${line}`);
    }
  });
});

describe("mesh completion bash|zsh|fish (issue 29)", () => {
  for (const shell of ["bash", "zsh", "fish"]) {
    it(`the ${shell} script, made from the program's commands, names every verb and every verb's options`, async () => {
      const io = memoryIo();
      assert.equal(await runCli(["completion", shell], io), EXIT_OK, io.err());
      const script = io.out();
      for (const verb of CLI_VERBS) {
        for (const word of verb.path) assert.match(script, new RegExp(`\\b${word}\\b`), `${shell}: ${verb.path.join(" ")}`);
        for (const option of verb.options ?? []) {
          const long = /--([a-z-]+)/.exec(option.flags)![1]!;
          assert.ok(script.includes(shell === "fish" ? `-l ${long}` : `--${long}`), `${shell}: ${verb.path.join(" ")} ${option.flags}`);
        }
      }
      assert.match(script, /\bcompletion\b/);
    });
  }

  it("a shell it does not know is a usage error naming the three", async () => {
    const io = memoryIo();
    assert.equal(await runCli(["completion", "tcsh"], io), EXIT_USAGE);
    assert.match(io.err(), /bash, zsh, fish/);
  });
});

describe("mesh up on a mesh that exists (issue 29)", () => {
  /** A folder that holds a made mesh (mesh.json and its genesis node's name), nothing running. */
  function madeMesh(): string {
    const dir = mkdtempSync(join(tmpdir(), "mesh-up-made-"));
    writeFileSync(join(dir, "mesh.json"), JSON.stringify({
      genesisAddress: "tls://127.0.0.1:4222", fingerprint: "AB", operator: "operator-admin", listenHost: "127.0.0.1", port: 4222, monitorPort: 8222, createdAt: "2026-01-01T00:00:00.000Z",
    }));
    mkdirSync(join(dir, HOST_DIR));
    writeFileSync(join(dir, HOST_DIR, LOCAL_NODE_FILE), "box\n");
    return dir;
  }

  for (const [flag, value, made] of [["--address", "tls://127.0.0.1:4300", "tls://127.0.0.1:4222"], ["--node", "other", "box"]] as const) {
    it(`refuses ${flag} that differs from how the mesh was made (exit 2), naming both values and the fix, before starting anything`, async () => {
      const dir = madeMesh();
      try {
        const io = memoryIo();
        assert.equal(await runCli(["up", "--dir", dir, flag, value], io), EXIT_USAGE, io.err());
        assert.ok(io.err().includes(`${flag} ${value}`) && io.err().includes(made), io.err());
        assert.match(io.err(), new RegExp(`drop ${flag}`));
        assert.deepEqual(readdirSync(dir).sort(), [HOST_DIR, "mesh.json"], "nothing was made or started");
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});

describe("tables fit the terminal (issue 29)", () => {
  const rows = [
    { name: "alpha", modules: ["broker", "controller", "echo", "packet-filter", "store", "builder", "relay"], address: "tls://alpha.internal:4443" },
    { name: "beta", modules: [], address: "tls://beta.example.org:4443" },
  ];

  it("a table given a width fits it, each cut cell ending with an ellipsis; without one every cell is whole", () => {
    const fitted = table(rows, ["name", "modules", "address"], 40);
    for (const line of fitted) assert.ok(line.length <= 40, `${line.length}: ${line}`);
    assert.ok(fitted.some((l) => l.includes("…")), fitted.join("\n"));
    assert.ok(fitted[0]!.startsWith("NAME"), "the header stays");
    const whole = table(rows, ["name", "modules", "address"]);
    assert.ok(whole[1]!.includes("broker,controller,echo,packet-filter,store,builder,relay"));
    assert.ok(!whole.join("").includes("…"));
  });

  it("a bus verb's table fits stdout's columns on a terminal, and -o wide shows every cell whole", () => {
    const reply = { ok: true, v: 1, asOf: 1, nodes: rows } as never;
    const printed = (output: string, stdout: object): string[] => {
      const lines: string[] = [];
      const ctx = {
        io: { stdout, stderr: { write: () => true }, env: {} },
        globals: { json: false, output, credential: "", timeoutMs: 1 },
        out: (l: string) => lines.push(l), err: () => undefined,
      } as unknown as CliContext;
      report(ctx, "modules", reply, renderList("nodes", ["name", "modules", "address"]));
      return lines;
    };
    const tty = { write: () => true, isTTY: true, columns: 44 };
    for (const line of printed("text", tty)) assert.ok(line.length <= 44, `${line.length}: ${line}`);
    assert.ok(printed("wide", tty).some((l) => l.length > 44), "-o wide: whole cells");
    assert.ok(printed("text", { write: () => true }).some((l) => l.length > 44), "not a terminal: whole cells");
  });
});
