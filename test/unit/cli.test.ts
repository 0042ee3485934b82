import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCli } from "../../src/cli/run.ts";
import { EXIT_OK, EXIT_REFUSED, EXIT_USAGE, type CliIo } from "../../src/cli/context.ts";
import { registrationOrder } from "../../src/manifest/order.ts";
import { CLI_VERBS, busVerb, report, type CliVerb } from "../../src/cli/verbs.ts";
import { VERBS } from "../../src/contracts/verbs.ts";
import type { CliContext } from "../../src/cli/context.ts";
import { parseClientConfig, ConfigError, DEFAULT_CREDENTIAL_FILE } from "../../src/config.ts";

/** An in-memory io: what the CLI printed on each stream. */
function memoryIo(env: Record<string, string> = {}): CliIo & { out(): string; err(): string } {
  let out = "";
  let err = "";
  return {
    stdout: { write: (s: string) => { out += s; } },
    stderr: { write: (s: string) => { err += s; } },
    env,
    out: () => out,
    err: () => err,
  };
}

describe("mesh CLI without a server", () => {
  let dir: string;
  let closedPort: number;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "mesh-cli-unit-"));
    // A port nothing listens on: open one, note its number, close it.
    const probe: Server = createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    closedPort = (probe.address() as { port: number }).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
  });
  after(() => { rmSync(dir, { recursive: true, force: true }); });

  it("--help on the program and on every verb exits 0 and prints usage", async () => {
    const io = memoryIo();
    assert.equal(await runCli(["--help"], io), EXIT_OK);
    assert.match(io.out(), /Usage: mesh/);
    for (const verb of CLI_VERBS) {
      const each = memoryIo();
      assert.equal(await runCli([...verb.path, "--help"], each), EXIT_OK, verb.path.join(" "));
      assert.ok(each.out().includes(`Usage: mesh ${verb.path.join(" ")}`), each.out());
      assert.equal(each.out().includes("--json"), (verb.globals ?? []).includes("json"), `${verb.path.join(" ")} --help lists --json where it applies`);
    }
  });

  it("a verb that does not exist is a usage error (exit 2)", async () => {
    const io = memoryIo();
    assert.equal(await runCli(["frobnicate"], io), EXIT_USAGE);
    assert.match(io.err(), /unknown command 'frobnicate'/);
  });

  // Found by a new-user trial: `mesh module list` and `mesh -o json nodes` said only what was unknown.
  it("a list asked of a kind's group and -o before the verb are usage errors that name the way out", async () => {
    const list = memoryIo();
    assert.equal(await runCli(["module", "list"], list), EXIT_USAGE);
    assert.match(list.err(), /unknown command 'list'[\s\S]*mesh: `mesh get modules` lists them/);
    const early = memoryIo();
    assert.equal(await runCli(["-o", "json", "nodes"], early), EXIT_USAGE);
    assert.match(early.err(), /mesh: give -o after the verb: `mesh nodes \.\.\. -o json`/);
    const other = memoryIo();
    assert.equal(await runCli(["frobnicate"], other), EXIT_USAGE);
    assert.doesNotMatch(other.err(), /^mesh: /m, "no hint where none fits");
  });

  it("a missing argument or required option is a usage error (exit 2) naming it", async () => {
    const missingArg = memoryIo();
    assert.equal(await runCli(["assign", "showcase"], missingArg), EXIT_USAGE);
    assert.match(missingArg.err(), /missing required argument 'node'/);
    const missingKey = memoryIo();
    assert.equal(await runCli(["node", "enrol", "alpha"], missingKey), EXIT_USAGE);
    assert.match(missingKey.err(), /--key/);
  });

  it("R62: mesh up --cluster beyond JetStream's five replicas, or not a count, is a usage error (exit 2) naming --cluster, before anything is made", async () => {
    for (const size of ["0", "6", "9", "three"]) {
      const io = memoryIo();
      const target = join(dir, `cluster-${size}`);
      assert.equal(await runCli(["up", "--dir", target, "--cluster", size], io), EXIT_USAGE, size);
      assert.match(io.err(), /--cluster/, size);
      assert.equal(existsSync(target), false, `${size}: no mesh folder made`);
    }
  });

  it("a malformed --timeout is a usage error (exit 2)", async () => {
    const io = memoryIo();
    assert.equal(await runCli(["where", "--timeout", "soon"], io), EXIT_USAGE);
    assert.match(io.err(), /--timeout/);
  });

  it("a missing credential file is a usage error naming --credential and MESH_CREDENTIAL", async () => {
    const io = memoryIo({ MESH_CREDENTIAL: join(dir, "absent.json") });
    assert.equal(await runCli(["where"], io), EXIT_USAGE);
    assert.match(io.err(), /absent\.json/);
    assert.match(io.err(), /MESH_CREDENTIAL/);
  });

  it("R3: a credential file with a bad field names the field, never the password", async () => {
    const file = join(dir, "bad.json");
    writeFileSync(file, JSON.stringify({ address: "nats://user:pw@127.0.0.1:4222", user: "operator-ann", password: "never-printed" }));
    const io = memoryIo();
    assert.equal(await runCli(["where", "--credential", file], io), EXIT_USAGE);
    assert.match(io.err(), /"address"/);
    assert.ok(!io.err().includes("never-printed"));
  });

  it("R3: an unreachable bus exits 2 with one line naming the address, never the password", async () => {
    const file = join(dir, "operator.json");
    const address = `tls://127.0.0.1:${closedPort}`;
    writeFileSync(file, JSON.stringify({ address, user: "operator-ann", password: "never-printed", fingerprint: Array(32).fill("AB").join(":") }));
    const io = memoryIo({ MESH_CREDENTIAL: file });
    assert.equal(await runCli(["where", "--timeout", "2000"], io), EXIT_USAGE);
    assert.ok(io.err().includes(address), io.err());
    assert.ok(!io.err().includes("never-printed"));
    assert.equal(io.err().trim().split("\n").length, 1);
    assert.ok(!/\n\s+at /.test(io.err()), "no stack trace");
  });

  it("what the request contract refuses is a usage error before dialling (exit 2), naming the argument and the choices (found by a new-user trial)", async () => {
    const file = join(dir, "operator-contract.json");
    const address = `tls://127.0.0.1:${closedPort}`;
    writeFileSync(file, JSON.stringify({ address, user: "operator-ann", password: "never-printed", fingerprint: Array(32).fill("AB").join(":") }));
    const io = memoryIo({ MESH_CREDENTIAL: file });
    assert.equal(await runCli(["credential", "rotate", "nosuch", "x", "--timeout", "2000"], io), EXIT_USAGE);
    assert.match(io.err(), /^mesh: credential rotate: kind: .*controller.*module/);
    assert.ok(!io.err().includes(address), `nothing was dialled: ${io.err()}`);
    assert.ok(!io.err().includes("command id"), "no command was sent");
  });

  it("R23: a manifest file that is not JSON is refused before dialling (exit 2), naming the file", async () => {
    const file = join(dir, "broken.json");
    writeFileSync(file, "{ name: ");
    const io = memoryIo({ MESH_CREDENTIAL: join(dir, "absent.json") });
    assert.equal(await runCli(["module", "register", file], io), EXIT_USAGE);
    assert.ok(io.err().includes("broken.json"));
    assert.ok(!io.err().includes("absent.json"), "the credential was not needed yet");
  });

  it("R25: several manifests are registered declarers first, whatever order they are given in", () => {
    const files = readdirSync("examples").filter((f) => f.endsWith(".json")).sort().reverse();
    const items = files.map((file) => ({ file, manifest: JSON.parse(readFileSync(join("examples", file), "utf8")) as Record<string, unknown> }));
    const ordered = registrationOrder(items);
    assert.equal(ordered.length, items.length);
    const declaredSoFar = new Set<string>();
    for (const { file, manifest } of ordered) {
      const own = Object.keys((manifest.seats ?? {}) as object);
      for (const seat of own) declaredSoFar.add(seat);
      const follows = ((manifest.follows ?? []) as Array<{ seat: string }>).map((f) => f.seat);
      for (const seat of [...((manifest.claims ?? []) as string[]), ...((manifest.uses ?? []) as string[]), ...follows]) {
        assert.ok(declaredSoFar.has(seat), `${file} needs ${seat} before it is declared`);
      }
    }
  });

  it("adding a verb is one registration: runCli builds its parser from the verb list", async () => {
    const seen: unknown[] = [];
    const extra: CliVerb = {
      path: ["frobnicate"],
      summary: "a verb no one registered",
      examples: [["frobnicate two nodes", "mesh frobnicate alpha beta"]],
      arguments: [{ name: "nodes", description: "nodes", variadic: true, optional: true }],
      options: [{ flags: "--wait", description: "wait" }],
      run: async (_ctx, args, options) => { seen.push(args, options); return EXIT_REFUSED; },
    };
    const io = memoryIo();
    assert.equal(await runCli(["frobnicate", "alpha", "beta", "--wait"], io, [...CLI_VERBS, extra]), EXIT_REFUSED);
    assert.deepEqual(seen, [[["alpha", "beta"]], { wait: true }]);
    // A bus verb builds its body from its arguments.
    const bus = busVerb({ path: ["frobnicate-bus"], verb: "node.remove", examples: [], arguments: [{ name: "node", description: "n" }], body: (a) => ({ node: a[0] }) });
    assert.deepEqual(bus.path, ["frobnicate-bus"]);
    assert.equal(bus.summary, VERBS["node.remove"].summary, "a bus verb shows its contract's summary");
  });
});

describe("refusals name what the person typed", () => {
  it("a refused field is named by its flag or argument, once: in the message when it names the field, else in the place", () => {
    const lines: string[] = [];
    const ctx = { globals: { json: false }, out: () => {}, err: (line: string) => lines.push(line) } as unknown as CliContext;
    const reply = { ok: false as const, error: { code: "invalid-request", field: "publicKey", message: `"publicKey": not base64` } };
    assert.equal(report(ctx, "node.enrol", reply, undefined, { publicKey: "--key" }), EXIT_REFUSED);
    assert.equal(lines[0], "mesh node enrol: refused (invalid-request): --key: not base64");
    // A field with no spelling of its own keeps the request's name.
    report(ctx, "node.enrol", { ok: false, error: { code: "invalid-request", field: "other", message: "m" } }, undefined, { publicKey: "--key" });
    assert.equal(lines[1], `mesh node enrol: refused (invalid-request) at "other": m`);
  });
});

describe("R76: an internal failure names the command id", () => {
  it("R76: a command answered internal names its id, and that sending it again with --command-id gets its reply", () => {
    const lines: string[] = [];
    const ctx = { globals: { json: false }, out: () => {}, err: (line: string) => lines.push(line) } as unknown as CliContext;
    const reply = { ok: false as const, error: { code: "internal", message: "the controller failed", commandId: "enrol-7" } };
    assert.equal(report(ctx, "node.enrol", reply, undefined, {}, "enrol-7"), EXIT_REFUSED);
    assert.match(lines[0]!, /--command-id enrol-7/);
    // The id the controller names is printed even when the CLI was given none to name.
    report(ctx, "node.enrol", reply);
    assert.match(lines[1]!, /--command-id enrol-7/);
  });
});

describe("parseClientConfig", () => {
  it("R35: defaults the credential file and the timeout, and freezes the result", () => {
    const config = parseClientConfig({});
    assert.equal(config.credentialFile, DEFAULT_CREDENTIAL_FILE);
    assert.equal(config.timeoutMs, 10_000);
    assert.ok(Object.isFrozen(config));
    assert.equal(parseClientConfig({ MESH_CREDENTIAL: "/x/op.json", MESH_TIMEOUT_MS: "2500" }).timeoutMs, 2_500);
  });

  it("R35: a malformed MESH_TIMEOUT_MS is refused naming the variable", () => {
    assert.throws(() => parseClientConfig({ MESH_TIMEOUT_MS: "soon" }), (e: unknown) => e instanceof ConfigError && e.variables.includes("MESH_TIMEOUT_MS"));
  });
});

describe("mesh and deeply nested JSON", () => {
  let dir: string;
  before(() => { dir = mkdtempSync(join(tmpdir(), "mesh-deep-")); });
  after(() => { rmSync(dir, { recursive: true, force: true }); });

  it("issue 9: a deeply nested manifest is refused as a usage error naming the file, not a stack overflow", async () => {
    const depth = 200_000;
    const file = join(dir, "deep.json");
    writeFileSync(file, `{"name":"deep","version":"1","x":${"[".repeat(depth)}${"]".repeat(depth)}}`);
    const requests: string[] = [];
    const nc = { info: undefined, request: async (subject: string) => { requests.push(subject); return { string: () => "{\"ok\":true}" }; } };
    const lines: string[] = [];
    const ctx = {
      io: { stdout: { write: () => undefined }, stderr: { write: () => undefined }, env: {} },
      config: { credentialFile: "unused", timeoutMs: 1_000 },
      globals: { credential: "unused", json: false, timeoutMs: 1_000 },
      connection: async () => nc, asker: () => "operator-test",
      out: (line: string) => { lines.push(line); }, err: (line: string) => { lines.push(line); },
    } as unknown as CliContext;
    const register = CLI_VERBS.find((v) => v.path.join(" ") === "module register")!;
    await assert.rejects(register.run(ctx, [[file]], {}), (error: Error) => error.name === "UsageError" && error.message.includes(file));
    assert.deepEqual(requests, [], "nothing was sent");
  });
});

describe("mesh writing into a closed pipe", () => {
  it("issue 9: `mesh --help | head -0` exits quietly on EPIPE, no stack trace", async () => {
    const { spawn } = await import("node:child_process");
    const { fileURLToPath } = await import("node:url");
    const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));
    // The reader is gone before the CLI writes a byte: every write of its output meets EPIPE.
    const child = spawn(process.execPath, ["--import", "tsx", main, "--help"], { stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.destroy();
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => { stderr += chunk.toString(); });
    const code = await new Promise<number | null>((resolve) => child.on("close", (c) => resolve(c)));
    assert.equal(stderr, "", "nothing on stderr");
    assert.equal(code, 0);
  });
});
