/**
 * R71 on a whole mesh of two nodes: a module on the node that does not hold the broker dials the
 * address its env names and verifies the bus with an ordinary TLS client against its
 * `certificate.pem` (no pin, nothing turned off), before and after the broker's seat is handed
 * over to the other node. One box: `<node>.internal` resolves nowhere, so the client dials
 * 127.0.0.1 and checks the name its env gives (TLS server name), as a resolver would make it.
 */
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, nkeyAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import { up, operatorConnection, operatorUser, busReloadOptions, HOST_DIR, type UpResult } from "../../src/up/up.ts";
import { inProcessLauncher, type InProcessLauncher } from "../../src/up/daemon.ts";
import { stopAll } from "../../src/up/processes.ts";
import { freePort } from "../../installer/serverConfig.ts";
import { askAs } from "../support/client.ts";
import { EXIT_OK } from "../../src/cli/context.ts";
import { initHostKeys, saveNodeCredential, startHost, readCredentialFile, NODE_CREDENTIAL_FILE, type Host } from "../../src/host/index.ts";
import { runMesh, type CliRun } from "../support/cli.ts";
import { parseBusAddress } from "../../src/projections/index.ts";
import { parseEnvFile } from "../../src/files/envFile.ts";

const NODE = "alpha";
const app = { name: "app", version: "1.0.0" };

/** A module's env file as key → value. */
function envFile(path: string): Record<string, string> {
  return parseEnvFile(readFileSync(path, "utf8"));
}

/** Dials as a standard client with exactly the module's env: its address's host as the TLS name, its certificate file as the only CA. */
async function dialWithEnv(env: Record<string, string>): Promise<NatsConnection> {
  const { host, port } = parseBusAddress(env.MESH_BROKER_ADDRESS!);
  return connect({
    servers: `127.0.0.1:${port}`, reconnect: false, timeout: 5_000, inboxPrefix: env.MESH_INBOX_PREFIX!,
    authenticator: nkeyAuthenticator(new TextEncoder().encode(env.MESH_NKEY_SEED!)),
    tls: { caFile: env.MESH_BROKER_CERTIFICATE_FILE!, servername: host } as object,
  });
}

describe("R71: a module on the other node verifies the bus against its certificate.pem, across a handover", () => {
  let root: string;
  let dir: string;
  let launcher: InProcessLauncher;
  let result: UpResult;
  let operator: NatsConnection;
  const hosts: Host[] = [];
  const logs: string[] = [];
  const log = (line: string) => { logs.push(line); };
  const ask = async (verb: string, body: Record<string, unknown> = {}) => {
    const reply = await askAs(operator, operatorUser(result.paths), verb, body, 30_000);
    assert.ok(reply.ok, `${verb} refused: ${JSON.stringify(reply)}`);
    return reply as Record<string, unknown>;
  };
  const mesh = (...argv: string[]): Promise<CliRun> =>
    runMesh(argv, { MESH_CREDENTIAL: result.paths.operatorCredential, MESH_TIMEOUT_MS: "30000" });

  before(async () => {
    root = mkdtempSync(join(tmpdir(), "mesh-ca-two-"));
    dir = join(root, ".mesh");
    launcher = inProcessLauncher(log);
    const port = await freePort();
    result = await up({ dir, log, launcher, brokerAddress: `tls://127.0.0.1:${port}`, node: NODE, detachBus: false, timeoutMs: 30_000 });
    operator = await operatorConnection(result.paths);
  });
  after(async () => {
    for (const host of hosts) await host.stop().catch(() => undefined);
    await operator?.close().catch(() => undefined);
    await launcher?.stop();
    if (dir) await stopAll(dir);
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it("R71: the module on beta connects verified before and after mesh-broker is handed over from alpha to beta", async () => {
    // beta: a second node on this box, its agent able to install the list on the one bus (a holder may be either).
    const stateDir = join(root, "beta");
    const { publicKey, nkey } = initHostKeys(stateDir);
    saveNodeCredential(stateDir, await ask("node.enrol", { node: "beta", publicKey, nkey }));
    const credential = readCredentialFile(join(stateDir, NODE_CREDENTIAL_FILE), stateDir);
    hosts.push(startHost({ stateDir, node: "beta", credential, log, bus: busReloadOptions(result.paths), backoff: { initialMs: 100, maxMs: 500 } }));
    await ask("overlay.place", { node: "beta" });
    await ask("module.register", { manifest: app });
    await ask("module.issue", { module: "app" });
    await ask("assign", { module: "app", node: "beta" });
    const first = await mesh("push", "--wait", "--json");
    assert.equal(first.code, EXIT_OK, `${first.out} ${first.err}`);
    const env = envFile(join(stateDir, "modules", "app", "env"));
    assert.equal(parseBusAddress(env.MESH_BROKER_ADDRESS!).host, `${NODE}.internal`, "beta is told the broker holder's overlay name (R7)");
    await (await dialWithEnv(env)).close();

    const holder = (await ask("where")) as { broker: string | null };
    assert.equal(holder.broker, NODE);
    await ask("seat.handover", { seat: "mesh-broker", from: NODE, to: "beta" });
    const moved = await mesh("push", "--wait", "--json");
    assert.equal(moved.code, EXIT_OK, `${moved.out} ${moved.err}`);
    const after = envFile(join(stateDir, "modules", "app", "env"));
    await (await dialWithEnv(after)).close();
    // Nobody locked out: a module on alpha is now told beta's overlay name, which the reissued certificate names.
    const onAlpha = envFile(join(dir, HOST_DIR, "modules", "showcase", "env"));
    assert.equal(parseBusAddress(onAlpha.MESH_BROKER_ADDRESS!).host, "beta.internal");
    await (await dialWithEnv(onAlpha)).close();
  });
});
