/**
 * R71 for a mesh made before the CA existed: its bus presented its own self-signed certificate
 * (`openssl req -x509`, as genesis made it then), every credential, the records and controller.env
 * pinned that certificate, and no `mesh-ca.pem` was beside it. Its next push moves it over: that
 * certificate becomes the CA, the bus presents one issued by it naming every host a principal is
 * told, and nobody is locked out (the operator's file as it was, a connection made before, the
 * controller's configuration), while a module verifies the bus the ordinary way.
 */
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { promisify } from "node:util";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { X509Certificate } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { genesis, meshPaths, type MeshPaths } from "../../installer/genesis.ts";
import { readEnvFile } from "../../installer/controllerEnv.ts";
import { freePort } from "../../installer/serverConfig.ts";
import { up, operatorConnection, operatorUser, EXAMPLES_DIR, HOST_DIR, LOCAL_NODE_FILE } from "../../src/up/up.ts";
import { inProcessLauncher, type InProcessLauncher } from "../../src/up/daemon.ts";
import { stopAll } from "../../src/up/processes.ts";
import { initHostKeys } from "../../src/host/index.ts";
import { certificatesOf, namesOfCertificate } from "../../src/crypto/ca.ts";
import { certificateFingerprint } from "../../src/crypto/secrets.ts";
import { parseBusAddress } from "../../src/projections/index.ts";
import { parseControllerConfig } from "../../src/config.ts";
import { makeFolderDurable } from "../../src/files/index.ts";
import { askAs } from "../support/client.ts";
import { readModuleEnv } from "../../src/kit/env.ts";
import { dialWithEnv } from "../support/localMesh.ts";

const execFileAsync = promisify(execFile);
const NODE = "alpha";
const OLD_NAME = "bus.example";
const MESH_BIN = join(import.meta.dirname, "..", "..", "bin", "mesh.js");

/** The bus's certificate as genesis made it before R71: openssl, self-signed, naming `names`, localhost and 127.0.0.1. */
async function preR71Certificate(dir: string, names: readonly string[]): Promise<{ fingerprint: string }> {
  const sans = [...new Set([...names, OLD_NAME, "localhost", "127.0.0.1"])].map((n) => (/^[\d.]+$/.test(n) ? `IP:${n}` : `DNS:${n}`)).join(",");
  const made = spawnSync("openssl", [
    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", join(dir, "bus-key.pem"),
    "-out", join(dir, "bus-cert.pem"), "-days", "3650", "-subj", "/CN=mesh-bus", "-addext", `subjectAltName=${sans}`,
  ], { encoding: "utf8" });
  if (made.status !== 0) throw new Error(`openssl failed: ${made.stderr}`);
  return { fingerprint: certificateFingerprint(readFileSync(join(dir, "bus-cert.pem"), "utf8")) };
}

describe("R71: a mesh made before the CA moves over on its next push", () => {
  let root: string;
  let paths: MeshPaths;
  let launcher: InProcessLauncher;
  let oldCertificate: string;
  let oldOperatorFile: string;
  let before71: NatsConnection;
  let operator: NatsConnection | undefined;
  const logs: string[] = [];
  const log = (line: string) => { logs.push(line); };

  before(async () => {
    root = mkdtempSync(join(tmpdir(), "mesh-pre-r71-"));
    paths = meshPaths(join(root, ".mesh"));
    // The steps `mesh up` takes at genesis, with the certificate made as before R71.
    const hostDir = join(paths.dir, HOST_DIR);
    makeFolderDurable(hostDir);
    writeFileSync(join(hostDir, LOCAL_NODE_FILE), `${NODE}\n`);
    initHostKeys(hostDir);
    const port = await freePort();
    await genesis({
      dir: paths.dir, brokerAddress: `tls://127.0.0.1:${port}`, log, node: { name: NODE, stateDir: hostDir },
      detachBus: true, makeCertificate: preR71Certificate,
    });
    // Before R71, controller.env named the bus's certificate (there was no CA).
    const envText = readFileSync(paths.controllerEnv, "utf8").replace(/^MESH_BROKER_CERTIFICATE=.*$/m, `MESH_BROKER_CERTIFICATE=${paths.tlsCert}`);
    writeFileSync(paths.controllerEnv, envText);
    oldCertificate = readFileSync(paths.tlsCert, "utf8");
    oldOperatorFile = readFileSync(paths.operatorCredential, "utf8");
    before71 = await operatorConnection(paths);
    launcher = inProcessLauncher(log);
  });
  after(async () => {
    await before71?.close().catch(() => undefined);
    await operator?.close().catch(() => undefined);
    await launcher?.stop();
    if (paths) await stopAll(paths.dir);
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it("R71: the push makes the old certificate the CA; a module verifies with its certificate.pem; the old operator file, an earlier connection and controller.env still work", async () => {
    assert.equal(existsSync(paths.caCert), false, "a mesh made before R71 has no CA");
    const pin = certificateFingerprint(oldCertificate);
    assert.equal(certificatesOf(oldCertificate).length, 1);

    await up({ dir: paths.dir, log, launcher, detachBus: true, timeoutMs: 60_000, manifests: [join(EXAMPLES_DIR, "broker.json")] });
    assert.equal(readFileSync(paths.caCert, "utf8"), oldCertificate, "the bus's old certificate is the mesh's CA now");
    const chain = certificatesOf(readFileSync(paths.tlsCert, "utf8"));
    assert.equal(chain.length, 2);
    assert.ok(new X509Certificate(chain[0]!).checkIssued(new X509Certificate(oldCertificate)), "the bus presents a certificate issued by it");
    assert.ok(namesOfCertificate(chain[0]!).includes(OLD_NAME), "the names the old certificate carried are kept");

    operator = await operatorConnection(paths);
    const ask = async (verb: string, body: Record<string, unknown> = {}) => {
      const reply = await askAs(operator!, operatorUser(paths), verb, body, 30_000);
      assert.ok(reply.ok, `${verb} refused: ${JSON.stringify(reply)}`);
      return reply;
    };
    await ask("overlay.place", { node: NODE });
    await ask("module.register", { manifest: { name: "app", version: "1.0.0" } });
    await ask("module.issue", { module: "app" });
    await ask("assign", { module: "app", node: NODE });
    await ask("push", { wait: true });
    const env = readModuleEnv(join(paths.dir, HOST_DIR, "modules", "app", "env"));
    assert.ok(!namesOfCertificate(oldCertificate).includes(`${NODE}.internal`), "the old certificate never named the holder's overlay name");
    assert.equal(readFileSync(env.MESH_BROKER_CERTIFICATE_FILE!, "utf8").trim(), oldCertificate.trim(), "its certificate.pem is the CA");
    await (await dialWithEnv(env)).close();
    // A module on another node is told the broker holder's overlay name (R7): verified too.
    await (await dialWithEnv({ ...env, MESH_BROKER_ADDRESS: `tls://${NODE}.internal:${parseBusAddress(env.MESH_BROKER_ADDRESS!).port}` })).close();

    // Nobody locked out: the operator's file unchanged, dialled by a fresh process; a connection
    // pinned before the move reconnects; the controller's configuration still reads its pin.
    assert.equal(readFileSync(paths.operatorCredential, "utf8"), oldOperatorFile);
    // Asynchronously: the controller answering runs in this very process.
    const nodes = await execFileAsync(process.execPath, [MESH_BIN, "nodes", "--json"], { encoding: "utf8", env: { ...process.env, MESH_CREDENTIAL: paths.operatorCredential } })
      .then(() => "ok", (error: { stdout?: string; stderr?: string }) => `${error.stdout ?? ""} ${error.stderr ?? ""}`);
    assert.equal(nodes, "ok");
    const reconnected = (async () => {
      for await (const status of before71.status()) if (status.type === "reconnect") return "reconnected";
      return "closed";
    })();
    await before71.reconnect();
    const outcome = await Promise.race([reconnected, new Promise((resolve) => setTimeout(resolve, 10_000, "timed out").unref())]);
    assert.equal(outcome, "reconnected", "a connection pinned before the move reconnects after it");
    await before71.flush();
    assert.equal(parseControllerConfig(readEnvFile(paths.controllerEnv)).fingerprint, pin);
  });
});
