import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigError, parseControllerConfig, type Environment } from "../../src/config.ts";
import { certificateFingerprint, newMeshKey } from "../../src/crypto/secrets.ts";

/** Asserts that `run` throws a ConfigError naming exactly `variables` (order ignored). */
function refusesNaming(run: () => unknown, variables: string[]): ConfigError {
  let caught: unknown;
  try {
    run();
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof ConfigError, `expected a ConfigError, got ${String(caught)}`);
  assert.deepEqual([...caught.variables].sort(), [...variables].sort());
  return caught;
}

describe("parseControllerConfig", () => {
  let dir: string;
  let certificate: string;
  let fingerprint: string;
  let keyFile: string;
  let credentialFile: string;
  const password = "controller-secret-password-never-printed";
  const otherFingerprint = Array(32).fill("AB").join(":");

  before(() => {
    dir = mkdtempSync(join(tmpdir(), "mesh-config-"));
    certificate = join(dir, "bus.pem");
    const made = spawnSync(
      "openssl",
      ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
        "-subj", "/O=mesh", "-keyout", join(dir, "bus.key"), "-out", certificate],
      { encoding: "utf8" },
    );
    if (made.status !== 0) throw new Error(`openssl failed: ${made.stderr}`);
    fingerprint = certificateFingerprint(readFileSync(certificate, "utf8"));
    keyFile = join(dir, "mesh.key");
    writeFileSync(keyFile, `${newMeshKey()}\n`);
    credentialFile = join(dir, "controller.json");
    writeFileSync(credentialFile, JSON.stringify({ address: "tls://bus.example:4222", user: "controller-mesh-controller", password }));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const base = (): Environment => ({
    MESH_CONTROLLER_CREDENTIAL: credentialFile,
    MESH_KEY_FILE: keyFile,
    MESH_BROKER_CERTIFICATE: certificate,
  });

  it("R35: reads the settings once into a frozen result, with defaults (R19)", () => {
    const config = parseControllerConfig({ ...base(), MESH_BROKER_ADDRESS: "bus.example" });
    assert.ok(Object.isFrozen(config));
    assert.ok(Object.isFrozen(config.credential));
    assert.equal(config.fingerprint, fingerprint);
    assert.equal(config.credential.fingerprint, fingerprint);
    assert.equal(config.credential.address, "tls://bus.example:4222");
    assert.equal(config.credential.password, password);
    assert.deepEqual(config.controllerSubmits, ["mesh-build"]);
    assert.equal(config.replicas, 1);
    assert.equal(config.credentialFile, credentialFile);
  });

  it("R8: a genesis address without a port gets the bus's standard port", () => {
    assert.equal(parseControllerConfig({ ...base(), MESH_BROKER_ADDRESS: "bus.example" }).brokerAddress, "tls://bus.example:4222");
    assert.equal(parseControllerConfig({ ...base(), MESH_BROKER_ADDRESS: "tls://bus.example:7422" }).brokerAddress, "tls://bus.example:7422");
  });

  it("R19: the seats the controller submits to are a stated list", () => {
    const config = parseControllerConfig({ ...base(), MESH_CONTROLLER_SUBMITS: "mesh-build, mesh-store", MESH_CATALOGUE_REPLICAS: "3" });
    assert.deepEqual(config.controllerSubmits, ["mesh-build", "mesh-store"]);
    assert.equal(config.replicas, 3);
    refusesNaming(() => parseControllerConfig({ ...base(), MESH_CONTROLLER_SUBMITS: "Not A Seat" }), ["MESH_CONTROLLER_SUBMITS"]);
    refusesNaming(() => parseControllerConfig({ ...base(), MESH_CATALOGUE_REPLICAS: "two" }), ["MESH_CATALOGUE_REPLICAS"]);
  });

  it("R61, R77: the controllers' lease is off on one server and on by default on a cluster (2 s: a standby takes over within 3 s); MESH_CONTROLLER_LEASE_MS sets it", () => {
    assert.equal(parseControllerConfig(base()).leaseMs, 0);
    assert.equal(parseControllerConfig({ ...base(), MESH_CATALOGUE_REPLICAS: "3" }).leaseMs, 2_000);
    assert.equal(parseControllerConfig({ ...base(), MESH_CATALOGUE_REPLICAS: "3", MESH_CONTROLLER_LEASE_MS: "3000" }).leaseMs, 3_000);
    assert.equal(parseControllerConfig({ ...base(), MESH_CATALOGUE_REPLICAS: "3", MESH_CONTROLLER_LEASE_MS: "0" }).leaseMs, 0);
    for (const bad of ["soon", "500", "-1"]) refusesNaming(() => parseControllerConfig({ ...base(), MESH_CONTROLLER_LEASE_MS: bad }), ["MESH_CONTROLLER_LEASE_MS"]);
  });

  it("R62: a credential file listing every server of a cluster is dialled on all of them; an old single-address file reads as before", () => {
    const clustered = join(dir, "controller-cluster.json");
    const addresses = ["tls://bus-1.example:4222", "tls://bus-2.example:4222", "tls://bus-3.example:4222"];
    writeFileSync(clustered, JSON.stringify({ address: addresses[0], addresses, user: "controller-mesh-controller", password }));
    assert.deepEqual(parseControllerConfig({ ...base(), MESH_CONTROLLER_CREDENTIAL: clustered }).credential.addresses, addresses);
    assert.equal(parseControllerConfig(base()).credential.addresses, undefined);
    refusesNaming(() => {
      writeFileSync(clustered, JSON.stringify({ address: addresses[0], addresses: ["tls://user:pw@bus-2.example:4222"], user: "controller-mesh-controller", password }));
      parseControllerConfig({ ...base(), MESH_CONTROLLER_CREDENTIAL: clustered });
    }, ["MESH_CONTROLLER_CREDENTIAL"]);
  });

  it("R35: a fingerprint given directly that differs from the certificate's is refused naming both", () => {
    const error = refusesNaming(
      () => parseControllerConfig({ ...base(), MESH_BROKER_FINGERPRINT: otherFingerprint }),
      ["MESH_BROKER_CERTIFICATE", "MESH_BROKER_FINGERPRINT"],
    );
    assert.match(error.message, /unset MESH_BROKER_FINGERPRINT/);
    // The same fact stated twice, in either case, is accepted.
    assert.equal(parseControllerConfig({ ...base(), MESH_BROKER_FINGERPRINT: fingerprint.toLowerCase() }).fingerprint, fingerprint);
  });

  it("R34: MESH_BROKER_CERTIFICATE may carry the fingerprint itself, as a module's declared environment does", () => {
    const env = { ...base(), MESH_BROKER_CERTIFICATE: fingerprint.toLowerCase() };
    assert.equal(parseControllerConfig(env).fingerprint, fingerprint);
    refusesNaming(
      () => parseControllerConfig({ ...env, MESH_BROKER_FINGERPRINT: otherFingerprint }),
      ["MESH_BROKER_CERTIFICATE", "MESH_BROKER_FINGERPRINT"],
    );
  });

  it("R35: the bus address in two variables that disagree is refused naming both", () => {
    const error = refusesNaming(
      () => parseControllerConfig({ ...base(), MESH_BROKER_ADDRESS: "bus.example", MESH_BUS_URL: "tls://other.example:4222" }),
      ["MESH_BUS_URL", "MESH_BROKER_ADDRESS"],
    );
    assert.match(error.message, /unset MESH_BUS_URL/);
    const agreeing = parseControllerConfig({ ...base(), MESH_BROKER_ADDRESS: "bus.example", MESH_BUS_URL: "tls://bus.example:4222" });
    assert.equal(agreeing.credential.address, "tls://bus.example:4222");
    const local = parseControllerConfig({ ...base(), MESH_BUS_URL: "tls://127.0.0.1:4443" });
    assert.equal(local.credential.address, "tls://127.0.0.1:4443");
  });

  it("R35: a credential file pinning another fingerprint than the certificate is refused naming both", () => {
    const pinned = join(dir, "pinned.json");
    writeFileSync(pinned, JSON.stringify({ address: "tls://bus.example:4222", user: "u", password: "p", fingerprint: otherFingerprint }));
    refusesNaming(
      () => parseControllerConfig({ ...base(), MESH_CONTROLLER_CREDENTIAL: pinned }),
      ["MESH_BROKER_CERTIFICATE", "MESH_CONTROLLER_CREDENTIAL"],
    );
  });

  it("R34: a tls address with no fingerprint to pin is refused", () => {
    refusesNaming(
      () => parseControllerConfig({ MESH_CONTROLLER_CREDENTIAL: credentialFile, MESH_KEY_FILE: keyFile }),
      ["MESH_BROKER_CERTIFICATE", "MESH_BROKER_FINGERPRINT"],
    );
  });

  it("R35: a missing file or an unreadable key fails with one line naming the variable, never a secret", () => {
    for (const [variable, env] of [
      ["MESH_BROKER_CERTIFICATE", { ...base(), MESH_BROKER_CERTIFICATE: join(dir, "missing.pem") }],
      ["MESH_KEY_FILE", { ...base(), MESH_KEY_FILE: join(dir, "missing.key") }],
      ["MESH_KEY_FILE", { ...base(), MESH_KEY_FILE: credentialFile }],
      ["MESH_CONTROLLER_CREDENTIAL", { ...base(), MESH_CONTROLLER_CREDENTIAL: join(dir, "missing.json") }],
      ["MESH_CONTROLLER_CREDENTIAL", { ...base(), MESH_CONTROLLER_CREDENTIAL: keyFile }],
      ["MESH_BROKER_CERTIFICATE", { ...base(), MESH_BROKER_CERTIFICATE: keyFile }],
      ["MESH_KEY_FILE", { MESH_CONTROLLER_CREDENTIAL: credentialFile, MESH_BROKER_CERTIFICATE: certificate }],
      ["MESH_CONTROLLER_CREDENTIAL", { MESH_KEY_FILE: keyFile, MESH_BROKER_CERTIFICATE: certificate, MESH_CONTROLLER_CREDENTIAL: "" }],
      ["MESH_BROKER_ADDRESS", { ...base(), MESH_BROKER_ADDRESS: "tls://user:pw@bus.example:4222" }],
    ] as const) {
      const error = refusesNaming(() => parseControllerConfig(env), [variable]);
      assert.equal(error.message.includes("\n"), false, error.message);
      assert.equal(error.message.includes(password), false);
      assert.equal(error.message.includes("pw@"), false);
    }
  });
});
