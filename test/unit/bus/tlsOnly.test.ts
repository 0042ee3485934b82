import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BusConnectError, BusCredential, connectToBus } from "../../../src/bus/connect.ts";
import { probeCertificate } from "../../../src/bus/pin.ts";
import { CredentialFileError, readBusCredential, writeBusCredential } from "../../../src/files/index.ts";
import { ConfigError, parseControllerConfig } from "../../../src/config.ts";
import { HostStateError, initHostKeys, saveNodeCredential } from "../../../src/host/index.ts";
import { runCli } from "../../../src/cli/run.ts";
import { EXIT_USAGE, type CliIo } from "../../../src/cli/context.ts";
import { newMeshKey, newNodeKeyPair, sealToNode } from "../../../src/crypto/secrets.ts";
import { Declaration } from "../../../src/contracts/declaration.ts";
import { DeclarationRefused, desiredFiles } from "../../../src/host/index.ts";

/**
 * R67: every client of the mesh dials TLS and verifies the bus. A credential naming a `nats://`
 * address is refused at every boundary a mesh client reads one through (the credential file, the
 * controller's configuration, the host's credential, the CLI) and by the dial itself, before any
 * byte is sent; and no message suggests a `nats://` address. These tests run as the product does:
 * this file does not load the test harness that lets bus tests dial plain test servers.
 */

const SEED = `SU${"A".repeat(56)}`;
const FINGERPRINT = Array(32).fill("AB").join(":");

/** A TCP listener that counts the connections it is offered and answers each with `greeting`, if any. */
async function listener(greeting?: string): Promise<{ port: number; connections: () => number; close: () => Promise<void> }> {
  let count = 0;
  const sockets: Socket[] = [];
  const server: Server = createServer((socket) => {
    count += 1;
    sockets.push(socket);
    socket.on("error", () => undefined);
    if (greeting !== undefined) socket.write(greeting);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as { port: number }).port,
    connections: () => count,
    close: () => new Promise<void>((resolve) => { for (const s of sockets) s.destroy(); server.close(() => resolve()); }),
  };
}

function memoryIo(env: Record<string, string>): CliIo & { err(): string } {
  let err = "";
  return { stdout: { write: () => undefined }, stderr: { write: (s: string) => { err += s; } }, env, err: () => err };
}

describe("R67: no client of the mesh dials a non-TLS address", () => {
  let dir: string;
  let bus: Awaited<ReturnType<typeof listener>>;
  let plain: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "mesh-tls-only-"));
    bus = await listener();
    plain = `nats://127.0.0.1:${bus.port}`;
  });
  after(async () => {
    await bus?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("R67: connectToBus refuses a nats:// address before opening a socket, saying the bus must offer TLS", async () => {
    for (const credential of [
      { address: plain, user: "operator-ann", seed: SEED },
      { address: `tls://127.0.0.1:${bus.port}`, addresses: [`tls://127.0.0.1:${bus.port}`, plain], user: "operator-ann", seed: SEED, fingerprint: FINGERPRINT },
    ]) {
      const refused = await connectToBus(credential, { reconnect: false, timeoutMs: 1_000 }).catch((e: unknown) => e);
      assert.ok(refused instanceof BusConnectError, String(refused));
      assert.match(refused.message, /TLS/);
      assert.doesNotMatch(refused.message, /use (a )?nats:\/\//);
    }
    assert.equal(bus.connections(), 0, "nothing was dialled: not even a CONNECT in clear");
  });

  it("R67: the credential shape refuses a nats:// address, in `address` or in `addresses`, naming the field", () => {
    const address = BusCredential.safeParse({ address: plain, user: "u", seed: SEED });
    assert.equal(address.success, false);
    assert.deepEqual(address.error?.issues[0]?.path, ["address"]);
    const addresses = BusCredential.safeParse({ address: "tls://bus.example:4222", addresses: ["tls://bus.example:4222", plain], user: "u", seed: SEED, fingerprint: FINGERPRINT });
    assert.equal(addresses.success, false);
    assert.deepEqual(addresses.error?.issues[0]?.path, ["addresses", 1]);
    assert.equal(BusCredential.safeParse({ address: "tls://bus.example:4222", user: "u", seed: SEED, fingerprint: FINGERPRINT }).success, true, "tls:// is the form (the control)");
  });

  it("R67: a credential file naming a nats:// address is refused on read and never written (CredentialFileError invalid, field address)", () => {
    const file = join(dir, "plain.json");
    writeFileSync(file, JSON.stringify({ address: plain, user: "operator-ann", seed: SEED }));
    assert.throws(() => readBusCredential(file), (e: unknown) => e instanceof CredentialFileError && e.code === "invalid" && e.field === "address" && /TLS/.test(e.message));
    const written = join(dir, "written.json");
    assert.throws(() => writeBusCredential(written, { address: plain, user: "operator-ann", seed: SEED }), (e: unknown) => e instanceof CredentialFileError && e.field === "address");
    assert.throws(() => statSync(written), "nothing was written");
  });

  it("R67: the controller's configuration refuses a nats:// credential file (MESH_CONTROLLER_CREDENTIAL) and a nats:// MESH_BUS_URL", () => {
    const keyFile = join(dir, "mesh.key");
    writeFileSync(keyFile, `${newMeshKey()}\n`);
    const plainFile = join(dir, "controller-plain.json");
    writeFileSync(plainFile, JSON.stringify({ address: plain, user: "controller-mesh-controller", seed: SEED }));
    const tlsFile = join(dir, "controller-tls.json");
    writeFileSync(tlsFile, JSON.stringify({ address: "tls://bus.example:4222", user: "controller-mesh-controller", seed: SEED, fingerprint: FINGERPRINT }));
    const refusal = (env: Record<string, string>): ConfigError => {
      try {
        parseControllerConfig({ MESH_KEY_FILE: keyFile, ...env });
      } catch (error) {
        assert.ok(error instanceof ConfigError, String(error));
        return error;
      }
      assert.fail("accepted");
    };
    assert.deepEqual(refusal({ MESH_CONTROLLER_CREDENTIAL: plainFile }).variables, ["MESH_CONTROLLER_CREDENTIAL"]);
    const url = refusal({ MESH_CONTROLLER_CREDENTIAL: tlsFile, MESH_BUS_URL: plain });
    assert.deepEqual(url.variables, ["MESH_BUS_URL"]);
    assert.match(url.message, /TLS/);
    assert.doesNotMatch(url.message, /nats:\/\/host/, "the message offers no nats:// form");
  });

  it("R67: the host refuses an enrol reply naming a nats:// address (bad-credential, naming the address) and keeps no credential", () => {
    const state = join(dir, "node");
    const { nkey } = initHostKeys(state);
    assert.throws(
      () => saveNodeCredential(state, { node: "alpha", credential: { address: plain, user: "node-alpha", nkey, fingerprint: "" } }),
      (e: unknown) => e instanceof HostStateError && e.code === "bad-credential" && /address/.test(e.message) && /TLS/.test(e.message),
    );
    assert.ok(!readdirSync(state).includes("credential.json"));
  });

  it("R67: a host refuses a declaration whose module credential names a nats:// address (DeclarationRefused): its module would dial in clear", () => {
    const { publicKey, privateKey } = newNodeKeyPair();
    const declared = (address: string) => Declaration.parse({
      node: "alpha",
      modules: [{ module: "app", version: "1.0.0", credential: { address, user: "module-app", sealed: sealToNode(publicKey, SEED), fingerprint: FINGERPRINT },
        env: {
          MESH_BROKER_ADDRESS: address, MESH_BROKER_CERTIFICATE: FINGERPRINT, MESH_USER: "module-app", MESH_INBOX_PREFIX: "_INBOX_module-app",
          MESH_WORK: "[]", MESH_SUBMITS: "[]", MESH_EMITS: "[]", MESH_FOLLOWS: "[]", MESH_TOOLS: "[]",
        },
        provisions: [] }],
      provisions: [],
      digest: "d",
    });
    assert.throws(() => desiredFiles(declared(plain), privateKey), (e: unknown) => e instanceof DeclarationRefused && /TLS/.test(e.message));
    assert.ok(desiredFiles(declared("tls://bus.example:4222"), privateKey).has("modules/app/credential.json"), "a tls:// one is written (the control)");
  });

  it("R67: the CLI refuses a nats:// credential file before dialling (exit 2), saying the bus must offer TLS", async () => {
    const file = join(dir, "operator-plain.json");
    writeFileSync(file, JSON.stringify({ address: plain, user: "operator-ann", seed: SEED }));
    const io = memoryIo({ MESH_CREDENTIAL: file });
    assert.equal(await runCli(["nodes", "--timeout", "1000"], io), EXIT_USAGE);
    assert.match(io.err(), /address/);
    assert.match(io.err(), /TLS/);
    assert.equal(bus.connections(), 0, "nothing was dialled");
  });

  it("R67: a server that offers no TLS is refused with a message asking for TLS on the bus, never suggesting nats://", async () => {
    const noTls = await listener(`INFO ${JSON.stringify({ server_id: "x", version: "2.9.10", proto: 1, max_payload: 1048576 })}\r\n`);
    try {
      const probed = await probeCertificate("127.0.0.1", noTls.port, { timeoutMs: 2_000 }).catch((e: unknown) => e as Error);
      assert.ok(probed instanceof Error);
      assert.match(probed.message, /TLS/);
      assert.doesNotMatch(probed.message, /nats:\/\//);
      const dialled = await connectToBus({ address: `tls://127.0.0.1:${noTls.port}`, user: "operator-ann", seed: SEED, fingerprint: FINGERPRINT }, { reconnect: false, timeoutMs: 2_000 }).catch((e: unknown) => e as Error);
      assert.ok(dialled instanceof BusConnectError, String(dialled));
      assert.doesNotMatch(dialled.message, /nats:\/\//);
    } finally {
      await noTls.close();
    }
  });

  it("R67: no file under src/ offers a nats:// address in a message, none calls the test harness's plain-dial seam, and connectToBus is the one dial", () => {
    const files: string[] = [];
    const walk = (folder: string): void => {
      for (const name of readdirSync(folder)) {
        const path = join(folder, name);
        if (statSync(path).isDirectory()) walk(path);
        else if (path.endsWith(".ts")) files.push(path);
      }
    };
    walk("src");
    const offering = files.filter((file) => /["'`][^"'`\n]*nats:\/\/(host|<)/.test(readFileSync(file, "utf8")));
    assert.deepEqual(offering, [], "a string naming the nats://host form");
    const seam = files.filter((file) => /(?<!function )allowPlainBusDialsInThisTestProcess\s*\(\s*\)/.test(readFileSync(file, "utf8")));
    assert.deepEqual(seam, [], "the seam is called only by the test harness");
    const dialling = files.filter((file) => /import\s*\{[^}]*\bconnect\b[^}]*\}\s*from\s*"@nats-io\/transport-node"/.test(readFileSync(file, "utf8")));
    // Beside it, the module kit's dial (a module's own, verified against its certificate.pem): it
    // refuses any address but tls:// before dialling (test/unit/kit/env.test.ts).
    assert.deepEqual(dialling, [join("src", "bus", "connect.ts"), join("src", "kit", "module.ts")], "connectToBus is the one dial of the product");
  });
});
