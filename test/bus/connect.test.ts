import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect } from "@nats-io/transport-node";
import { startNatsServer, type NatsServer } from "../support/natsServer.ts";
import { connectToBus, BusConnectError, CertificateMismatch } from "../../src/bus/connect.ts";
import { certificateFingerprint } from "../../src/crypto/secrets.ts";
import { inboxPrefix } from "../../src/names.ts";

/** A self-signed EC certificate with no subject alternative names, as the mesh's bus has. */
function selfSignedCertificate(dir: string): { cert: string } {
  const made = spawnSync(
    "openssl",
    ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
      "-subj", "/CN=mesh-bus", "-keyout", join(dir, "bus.key"), "-out", join(dir, "bus.crt")],
    { encoding: "utf8" },
  );
  if (made.status !== 0) throw new Error(`openssl failed: ${made.stderr}`);
  return { cert: readFileSync(join(dir, "bus.crt"), "utf8") };
}

const WRONG_PIN = Array.from({ length: 32 }, () => "AB").join(":");

describe("connectToBus", () => {
  let certDir: string;
  let pem: string;
  let tlsServer: NatsServer;
  let authServer: NatsServer;
  before(async () => {
    certDir = mkdtempSync(join(tmpdir(), "mesh-cert-"));
    const { cert } = selfSignedCertificate(certDir);
    pem = cert;
    tlsServer = await startNatsServer({
      config: `tls { cert_file: "${join(certDir, "bus.crt")}", key_file: "${join(certDir, "bus.key")}" }`,
    });
    authServer = await startNatsServer({
      config: `authorization { users: [ { user: "operator-ann", password: "the-right-secret" } ] }`,
    });
  });
  after(async () => {
    await tlsServer?.stop();
    await authServer?.stop();
    rmSync(certDir, { recursive: true, force: true });
  });

  const tlsAddress = () => `tls://127.0.0.1:${tlsServer.port}`;

  it("R34: a client that verifies the bus certificate by name is refused (no names on it)", async () => {
    await assert.rejects(
      connect({ servers: `127.0.0.1:${tlsServer.port}`, tls: { ca: pem }, reconnect: false, timeout: 3_000 }),
    );
  });

  it("R34: a client pinning the certificate's SHA-256 fingerprint connects over TLS", async () => {
    const nc = await connectToBus(
      { address: tlsAddress(), user: "node-a", password: "pw", fingerprint: certificateFingerprint(pem) },
      { reconnect: false },
    );
    try {
      assert.equal(nc.info?.tls_required, true);
      await nc.flush();
    } finally {
      await nc.close();
    }
  });

  it("R34: the pin is compared case-insensitively (aa:bb and AA:BB are one fingerprint)", async () => {
    const nc = await connectToBus(
      { address: tlsAddress(), user: "node-a", password: "pw", fingerprint: certificateFingerprint(pem).toLowerCase() },
      { reconnect: false },
    );
    await nc.close();
  });

  it("R34: a wrong pin is refused naming the address and both fingerprints, never the password", async () => {
    const error = await connectToBus(
      { address: tlsAddress(), user: "node-a", password: "secret-never-shown", fingerprint: WRONG_PIN },
      { reconnect: false },
    ).then(() => null, (e: unknown) => e);
    assert.ok(error instanceof CertificateMismatch, `expected CertificateMismatch, got ${String(error)}`);
    assert.equal(error.expected, WRONG_PIN);
    assert.equal(error.presented, certificateFingerprint(pem));
    assert.ok(error.message.includes(tlsAddress()));
    assert.ok(error.message.includes(WRONG_PIN) && error.message.includes(certificateFingerprint(pem)));
    assert.ok(!error.message.includes("secret-never-shown"));
  });

  it("R34: a tls:// credential without a fingerprint is refused before dialling", async () => {
    await assert.rejects(
      connectToBus({ address: tlsAddress(), user: "node-a", password: "pw" }, { reconnect: false }),
      (e: unknown) => e instanceof BusConnectError && !(e instanceof CertificateMismatch),
    );
  });

  it("R34: pinning a server that offers no TLS is refused", async () => {
    await assert.rejects(
      connectToBus(
        { address: `tls://127.0.0.1:${authServer.port}`, user: "x", password: "y", fingerprint: WRONG_PIN },
        { reconnect: false },
      ),
      (e: unknown) => e instanceof BusConnectError && /TLS/.test(e.message),
    );
  });

  it("R3: a refused password gives one line naming the address, never the password", async () => {
    const address = `nats://127.0.0.1:${authServer.port}`;
    const error = await connectToBus({ address, user: "operator-ann", password: "a-wrong-secret" }, { reconnect: false })
      .then(() => null, (e: unknown) => e);
    assert.ok(error instanceof BusConnectError);
    assert.ok(error.message.includes(address));
    assert.ok(!error.message.includes("a-wrong-secret"));
    assert.equal(error.message.split("\n").length, 1);
  });

  it("R3: an unreachable bus gives one line naming the address, never the password", async () => {
    const stopped = await startNatsServer();
    const address = `nats://127.0.0.1:${stopped.port}`;
    await stopped.stop();
    const error = await connectToBus({ address, user: "u", password: "unreachable-secret" }, { reconnect: false, timeoutMs: 2_000 })
      .then(() => null, (e: unknown) => e);
    assert.ok(error instanceof BusConnectError);
    assert.ok(error.message.includes(address) && !error.message.includes("unreachable-secret"));
  });

  it("R33: a client replies on its own inbox prefix _INBOX_<user>", async () => {
    const address = `nats://127.0.0.1:${authServer.port}`;
    const nc = await connectToBus({ address, user: "operator-ann", password: "the-right-secret" }, { reconnect: false });
    try {
      const replies: string[] = [];
      const sub = nc.subscribe("probe.echo", {
        callback: (_e, m) => { replies.push(m.reply ?? ""); m.respond(); },
      });
      await nc.request("probe.echo", "", { timeout: 2_000 });
      sub.unsubscribe();
      assert.equal(replies.length, 1);
      assert.ok(replies[0]!.startsWith(`${inboxPrefix("operator-ann")}.`), replies[0]);
    } finally {
      await nc.close();
    }
  });
});
