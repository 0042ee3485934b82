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
import { busCertificateNames } from "../../src/projections/index.ts";

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
