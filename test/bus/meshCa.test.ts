/**
 * The mesh's certificate authority on a real bus (R71): genesis makes it beside the mesh key and
 * the bus presents a certificate issued by it, naming every address any principal is told.
 */
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { X509Certificate } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { genesis, type GenesisResult } from "../../installer/genesis.ts";
import { freePort } from "../../installer/serverConfig.ts";
import { BOOTSTRAP_SEED, BOOTSTRAP_USER } from "../../src/genesis.ts";
import { connectToBus } from "../../src/bus/connect.ts";
import { replay } from "../../src/records/catalogue.ts";
import { certificatesOf, namesOfCertificate } from "../../src/crypto/ca.ts";
import { busCertificateNames, LOOPBACK_NAMES } from "../../src/projections/index.ts";
import { connect, nkeyAuthenticator } from "@nats-io/transport-node";
import { startNatsServer, type NatsServer } from "../support/natsServer.ts";
import { makeBusCertificate } from "../../installer/tls.ts";
import { newUserKey } from "../../src/crypto/secrets.ts";
import { renderUserList } from "../../src/compose/index.ts";
import { installUserList, type BusReloadOptions } from "../../src/host/index.ts";

describe("R71: the mesh's certificate authority at genesis", () => {
  let root: string;
  let made: GenesisResult;
  const logs: string[] = [];
  before(async () => {
    root = mkdtempSync(join(tmpdir(), "mesh-ca-"));
    const port = await freePort();
    made = await genesis({
      dir: join(root, ".mesh"), brokerAddress: `tls://127.0.0.1:${port}`, extraNames: ["vm.internal", "Bus.Example"],
      log: (line) => { logs.push(line); }, monitorPort: 0,
    });
  });
  after(async () => {
    await made?.bus?.stop();
    rmSync(root, { recursive: true, force: true });
  });

  it("R71: genesis makes the CA beside the mesh key, its key 0600 and in no log line", () => {
    assert.equal(statSync(made.paths.caKey).mode & 0o777, 0o600);
    assert.equal(statSync(made.paths.meshKey).mode & 0o777, 0o600);
    const ca = new X509Certificate(readFileSync(made.paths.caCert));
    assert.equal(ca.ca, true);
    const key = readFileSync(made.paths.caKey, "utf8");
    const body = key.split("\n")[1]!;
    assert.ok(logs.length > 0 && logs.every((line) => !line.includes(body) && !line.includes("PRIVATE KEY")), "no log line carries the CA's key");
  });

  it("R71: the bus's certificate is issued by the CA and names the genesis host, the given names and loopback, as the records compute them", async () => {
    const ca = new X509Certificate(readFileSync(made.paths.caCert));
    const chain = certificatesOf(readFileSync(made.paths.tlsCert, "utf8"));
    const leaf = new X509Certificate(chain[0]!);
    assert.ok(leaf.checkIssued(ca) && leaf.verify(ca.publicKey), "issued by the mesh's CA");
    assert.equal(leaf.ca, false);
    const named = namesOfCertificate(chain[0]!);
    assert.deepEqual(named, ["127.0.0.1", "::1", "bus.example", "localhost", "vm.internal"]);
    const nc = await connectToBus({ address: made.mesh.genesisAddress, user: BOOTSTRAP_USER, seed: BOOTSTRAP_SEED, fingerprint: made.mesh.fingerprint }, { reconnect: false });
    try {
      const state = await replay(nc);
      assert.deepEqual(state.mesh?.names, ["bus.example", "vm.internal"], "the records keep the names genesis was given");
      assert.deepEqual(busCertificateNames(state), named, "the pure name set of the records is what the certificate names");
    } finally {
      await nc.close();
    }
  });
});

describe("R71: the broker's holder renews the bus's certificate with a pushed user list", () => {
  let dir: string;
  let server: NatsServer;
  let target: BusReloadOptions;
  let caPem: string;
  let certFile: string;
  const admin = newUserKey();
  const users = [{ user: "admin", nkey: admin.publicKey, permissions: { publish: { allow: [">"] }, subscribe: { allow: [">"] } }, principal: { kind: "operator" as const, name: "admin" } }];

  /** A standard nats.js client verifying the bus against the CA alone, as if it dialled `name` (its TLS server name): "ok" or the error's code. */
  async function dialAs(name: string): Promise<string> {
    try {
      const nc = await connect({
        servers: `127.0.0.1:${server.port}`, tls: { ca: caPem, servername: name } as object, reconnect: false, timeout: 3_000,
        authenticator: nkeyAuthenticator(new TextEncoder().encode(admin.seed)),
      });
      await nc.close();
      return "ok";
    } catch (error) {
      const failure = error as { code?: string; cause?: { code?: string } };
      return failure.cause?.code ?? (failure.code?.startsWith("ERR_TLS") ? failure.code : undefined) ?? String((error as Error).message);
    }
  }

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "mesh-ca-renew-"));
    const made = await makeBusCertificate(dir, ["bus.example"]);
    caPem = readFileSync(made.caFile, "utf8");
    certFile = made.certFile;
    server = await startNatsServer({
      dir,
      files: { "users.conf": renderUserList({ users, busNames: ["bus.example", ...LOOPBACK_NAMES] }) },
      config: [`include "users.conf"`, `pid_file: "${join(dir, "server.pid")}"`, `tls { cert_file: "${made.certFile}", key_file: "${made.keyFile}" }`].join("\n"),
    });
    target = { includeFile: join(dir, "users.conf"), configFile: server.configFile, pid: join(dir, "server.pid"), monitorUrl: `http://127.0.0.1:${server.monitorPort}`, reloadTimeoutMs: 10_000 };
  });
  after(async () => {
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("R71: a list naming a new host has the certificate reissued by the CA and presented after the one reload; the same list again changes nothing", async () => {
    assert.equal(await dialAs("bus.example"), "ok");
    assert.equal(await dialAs("vm.internal"), "ERR_TLS_CERT_ALTNAME_INVALID", "before: the bus's certificate does not name vm.internal");
    const text = renderUserList({ users, busNames: ["bus.example", "vm.internal", ...LOOPBACK_NAMES] });
    assert.equal((await installUserList(text, target)).changed, true);
    assert.ok(namesOfCertificate(readFileSync(certFile, "utf8")).includes("vm.internal"));
    assert.equal(await dialAs("vm.internal"), "ok", "after: a standard client verifying against the CA accepts the bus as vm.internal");
    assert.equal(await dialAs("bus.example"), "ok", "and still as bus.example");
    const issued = readFileSync(certFile, "utf8");
    assert.deepEqual(await installUserList(text, target), { changed: false });
    assert.equal(readFileSync(certFile, "utf8"), issued, "the same names: no new certificate");
  });
});
