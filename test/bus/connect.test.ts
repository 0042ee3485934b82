import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, errors, type NatsConnection } from "@nats-io/transport-node";
import { startNatsServer, waitFor, type NatsServer } from "../support/natsServer.ts";
import { connectToBus, BusConnectError, CertificateMismatch } from "../../src/bus/connect.ts";
import { certificateFingerprint } from "../../src/crypto/secrets.ts";
import { inboxPrefix } from "../../src/names.ts";
import { makeBusCertificate, reissueBusCertificate } from "../../installer/tls.ts";

/**
 * The mesh's CA and a bus certificate issued by it in `dir` (R71, as genesis makes them): `cert`
 * is the CA's PEM (what a credential pins), `leaf` the bus's own certificate's fingerprint, `tls`
 * the nats-server block presenting it.
 */
async function meshCertificate(dir: string, names: readonly string[] = []): Promise<{ cert: string; leaf: string; tls: string }> {
  const made = await makeBusCertificate(dir, names);
  return {
    cert: readFileSync(made.caFile, "utf8"),
    leaf: certificateFingerprint(readFileSync(made.certFile, "utf8")),
    tls: `tls { cert_file: "${made.certFile}", key_file: "${made.keyFile}" }`,
  };
}

/** A self-signed EC certificate naming nothing, as the bus of a mesh made before R71 has (openssl, in the test only). */
function preCaCertificate(dir: string): { cert: string; tls: string } {
  const made = spawnSync(
    "openssl",
    ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
      "-subj", "/CN=mesh-bus", "-keyout", join(dir, "bus.key"), "-out", join(dir, "bus.crt")],
    { encoding: "utf8" },
  );
  if (made.status !== 0) throw new Error(`openssl failed: ${made.stderr}`);
  return { cert: readFileSync(join(dir, "bus.crt"), "utf8"), tls: `tls { cert_file: "${join(dir, "bus.crt")}", key_file: "${join(dir, "bus.key")}" }` };
}

const WRONG_PIN = Array.from({ length: 32 }, () => "AB").join(":");

describe("connectToBus", () => {
  let certDir: string;
  let pem: string;
  let leaf: string;
  let tlsServer: NatsServer;
  let authServer: NatsServer;
  before(async () => {
    certDir = mkdtempSync(join(tmpdir(), "mesh-cert-"));
    const made = await meshCertificate(certDir);
    pem = made.cert;
    leaf = made.leaf;
    tlsServer = await startNatsServer({ config: made.tls });
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

  it("R71: a standard client verifying the bus against the mesh CA (names included) connects; one trusting only the system's CAs is refused", async () => {
    const nc = await connect({ servers: `127.0.0.1:${tlsServer.port}`, tls: { ca: pem }, reconnect: false, timeout: 3_000, user: "node-a", pass: "pw" });
    await nc.close();
    await assert.rejects(connect({ servers: `127.0.0.1:${tlsServer.port}`, tls: {}, reconnect: false, timeout: 3_000 }));
  });

  it("R34 R71: a client pinning the mesh CA's SHA-256 fingerprint connects over TLS", async () => {
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
    assert.equal(error.presented, leaf);
    assert.ok(error.message.includes(tlsAddress()));
    assert.ok(error.message.includes(WRONG_PIN) && error.message.includes(leaf));
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

  it("without async traces (the controller's dial): a request still fails with the client's own error and message, its stack no longer naming the caller", async () => {
    const address = `nats://127.0.0.1:${authServer.port}`;
    const credential = { address, user: "operator-ann", password: "the-right-secret" };
    /** A request that nobody answers within 50 ms, made from a function the stack can name. */
    async function askTheSilentOne(nc: NatsConnection): Promise<unknown> {
      return nc.request("probe.silent", "", { timeout: 50 }).then(() => null, (e: unknown) => e);
    }
    const traced = await connectToBus(credential, { reconnect: false });
    const untraced = await connectToBus(credential, { reconnect: false, asyncTraces: false });
    try {
      const silent = untraced.subscribe("probe.silent", { callback: () => undefined });
      await untraced.flush();
      const withTrace = await askTheSilentOne(traced);
      const withoutTrace = await askTheSilentOne(untraced);
      silent.unsubscribe();
      for (const error of [withTrace, withoutTrace]) {
        assert.ok(error instanceof errors.TimeoutError, String(error));
        assert.equal(error.message, "timeout");
      }
      assert.ok(String((withTrace as Error).stack).includes("askTheSilentOne"), "the default keeps where the request was made");
      assert.ok(!String((withoutTrace as Error).stack).includes("askTheSilentOne"), String((withoutTrace as Error).stack));
      const unserved = await untraced.request("probe.unserved", "", { timeout: 1_000 }).then(() => null, (e: unknown) => e);
      assert.ok(unserved instanceof errors.RequestError && unserved.isNoResponders(), String(unserved));
    } finally {
      await traced.close();
      await untraced.close();
    }
  });

  describe("one bus certificate, dialled twice", () => {
    let ownDir: string;
    let ownPem: string;
    let own: NatsServer;
    before(async () => {
      // A certificate of its own: no dial in this process has met its pin yet.
      ownDir = mkdtempSync(join(tmpdir(), "mesh-cert-"));
      const made = await meshCertificate(ownDir);
      ownPem = made.cert;
      own = await startNatsServer({ config: made.tls });
    });
    after(async () => {
      await own?.stop();
      if (ownDir) rmSync(ownDir, { recursive: true, force: true });
    });
    const monitor = async <T>(path: string): Promise<T> => (await fetch(`http://127.0.0.1:${own.monitorPort}${path}`)).json() as Promise<T>;
    const dial = () => connectToBus({ address: `tls://127.0.0.1:${own.port}`, user: "node-a", password: "pw", fingerprint: certificateFingerprint(ownPem) }, { reconnect: false });

    it("R34: a dial closes its certificate probe cleanly: the bus logs no TLS handshake error and ends no connection as a TLS failure", async () => {
      const nc = await dial();
      await nc.close();
      type Closed = { connections: Array<{ cid: number; reason: string }> };
      // The probe's connection and the dial's own, both closed.
      const closed = await waitFor(async () => {
        const seen = await monitor<Closed>("/connz?state=closed");
        return seen.connections.length >= 2 && seen.connections;
      }, { timeoutMs: 10_000, name: "both connections closed" });
      assert.deepEqual(closed.filter((c) => /TLS/i.test(c.reason)), [], "no connection ended in a TLS handshake failure");
      assert.doesNotMatch(own.log(), /TLS handshake error/);
    });

    it("R34: a certificate that matched its pin is trusted again in this process without a second probe: one TLS connection per dial", async () => {
      await (await dial()).close();
      const before = (await monitor<{ total_connections: number }>("/varz")).total_connections;
      const nc = await dial();
      try {
        await nc.flush();
        const after = (await monitor<{ total_connections: number }>("/varz")).total_connections;
        assert.equal(after - before, 1, "the second dial opened one connection, not a probe and a connection");
      } finally {
        await nc.close();
      }
    });
  });

  describe("a bus that changed its certificate", () => {
    let dirs: string[] = [];
    let servers: NatsServer[] = [];
    before(() => { dirs = [mkdtempSync(join(tmpdir(), "mesh-cert-")), mkdtempSync(join(tmpdir(), "mesh-cert-"))]; });
    after(async () => {
      for (const server of servers) await server.stop();
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    });

    it("R34: a CA trusted by an earlier dial is not trusted blindly: the bus presenting a certificate of another CA on the same address is refused naming both", async () => {
      const [first, second] = await Promise.all(dirs.map((dir) => meshCertificate(dir)));
      const old = await startNatsServer({ config: first!.tls });
      servers.push(old);
      const credential = { address: `tls://127.0.0.1:${old.port}`, user: "node-a", password: "pw", fingerprint: certificateFingerprint(first!.cert) };
      await (await connectToBus(credential, { reconnect: false })).close();
      await old.stop();
      servers = [await startNatsServer({ config: second!.tls, port: old.port })];
      const error = await connectToBus(credential, { reconnect: false }).then(() => null, (e: unknown) => e);
      assert.ok(error instanceof CertificateMismatch, `expected CertificateMismatch, got ${String(error)}`);
      assert.equal(error.presented, second!.leaf);
    });

    it("R34 R71: the bus of a mesh made before R71 (its own self-signed certificate, naming nothing) is still dialled by its pin, which still refuses another", async () => {
      const dir = mkdtempSync(join(tmpdir(), "mesh-cert-"));
      dirs.push(dir);
      const old = preCaCertificate(dir);
      const server = await startNatsServer({ config: old.tls });
      servers.push(server);
      const credential = { address: `tls://127.0.0.1:${server.port}`, user: "node-a", password: "pw", fingerprint: certificateFingerprint(old.cert) };
      await (await connectToBus(credential, { reconnect: false })).close();
      await (await connectToBus(credential, { reconnect: false })).close();
      const wrong = await connectToBus({ ...credential, fingerprint: WRONG_PIN }, { reconnect: false }).then(() => null, (e: unknown) => e);
      assert.ok(wrong instanceof CertificateMismatch);
    });

    it("R71: a bus certificate reissued by the same CA (other names, another key) is trusted with the same pin, by a new dial and by a connection reconnecting", async () => {
      const dir = mkdtempSync(join(tmpdir(), "mesh-cert-"));
      dirs.push(dir);
      const first = await meshCertificate(dir, ["vm.internal"]);
      const old = await startNatsServer({ config: first.tls });
      servers.push(old);
      const credential = { address: `tls://127.0.0.1:${old.port}`, user: "node-a", password: "pw", fingerprint: certificateFingerprint(first.cert) };
      const held = await connectToBus(credential, { reconnectWaitMs: 50 });
      try {
        await old.stop();
        await reissueBusCertificate(dir, ["web1.internal"]);
        servers.push(await startNatsServer({ config: first.tls, port: old.port }));
        await waitFor(async () => { try { await held.flush(); return true; } catch { return false; } }, { timeoutMs: 10_000, name: "the held connection is back" });
        await (await connectToBus(credential, { reconnect: false })).close();
      } finally {
        await held.close();
      }
    });
  });
});
