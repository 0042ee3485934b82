/**
 * The mesh's certificate authority (R71), without a bus: the CA made at genesis, the bus's
 * certificate issued by it for a set of names, and an ordinary TLS client (Node's own verification,
 * names included) that trusts only the CA.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { X509Certificate, createPrivateKey } from "node:crypto";
import { connect, createServer, type TLSSocket } from "node:tls";
import type { AddressInfo } from "node:net";
import { adoptableCa, certificatesOf, issueBusCertificate, makeMeshCa, namesOfCertificate } from "../../src/crypto/ca.ts";

const NAMES = ["127.0.0.1", "::1", "localhost", "vm.internal"];

/** Dials a TLS server presenting `served` on loopback as `servername`, trusting only `caPem`; the handshake's error code, or "ok". */
async function handshake(served: { certificate: string; key: string }, caPem: string, servername: string): Promise<string> {
  const server = createServer({ cert: served.certificate, key: served.key }, (socket) => socket.end());
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const { port } = server.address() as AddressInfo;
    return await new Promise<string>((resolve) => {
      const socket: TLSSocket = connect({ host: "127.0.0.1", port, servername, ca: caPem, rejectUnauthorized: true }, () => {
        socket.destroy();
        resolve("ok");
      });
      socket.on("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    });
  } finally {
    server.close();
  }
}

describe("R71: the mesh's certificate authority", () => {
  it("R71: the CA is a CA certificate with its own P-256 key; the bus's certificate is issued by it, not a CA", async () => {
    const ca = await makeMeshCa();
    const authority = new X509Certificate(ca.certificate);
    assert.equal(authority.ca, true);
    assert.ok(authority.checkPrivateKey(createPrivateKey(ca.key)), "the key is the CA certificate's");
    const bus = await issueBusCertificate(ca, NAMES);
    const chain = certificatesOf(bus.certificate);
    assert.equal(chain.length, 2, "the bus presents its certificate then the CA's");
    const leaf = new X509Certificate(chain[0]!);
    assert.equal(new X509Certificate(chain[1]!).fingerprint256, authority.fingerprint256);
    assert.equal(leaf.ca, false);
    assert.ok(leaf.checkIssued(authority) && leaf.verify(authority.publicKey), "signed by the CA");
    assert.ok(leaf.checkPrivateKey(createPrivateKey(bus.key)), "the bus key is the certificate's");
    assert.deepEqual(namesOfCertificate(bus.certificate), NAMES, "the names read back as busCertificateNames writes them");
    assert.equal(leaf.checkHost("vm.internal"), "vm.internal");
    assert.equal(leaf.checkIP("127.0.0.1"), "127.0.0.1");
    assert.equal(leaf.checkHost("other.example"), undefined);
  });

  it("R71: an ordinary TLS client trusting only the CA accepts the bus under every name it carries, and no other", async () => {
    const ca = await makeMeshCa();
    const bus = await issueBusCertificate(ca, NAMES);
    assert.equal(await handshake(bus, ca.certificate, "vm.internal"), "ok");
    assert.equal(await handshake(bus, ca.certificate, "localhost"), "ok");
    assert.equal(await handshake(bus, ca.certificate, "web1.internal"), "ERR_TLS_CERT_ALTNAME_INVALID");
    const otherCa = await makeMeshCa();
    assert.notEqual(await handshake(bus, otherCa.certificate, "vm.internal"), "ok", "another mesh's CA does not vouch for this bus");
  });

  it("R71: a reissued certificate (new names, new key) is accepted by a client that trusted the CA before it", async () => {
    const ca = await makeMeshCa();
    const first = await issueBusCertificate(ca, NAMES);
    const second = await issueBusCertificate(ca, [...NAMES, "web1.internal"]);
    assert.notEqual(second.key, first.key);
    assert.equal(await handshake(second, ca.certificate, "web1.internal"), "ok");
    assert.equal(await handshake(second, ca.certificate, "vm.internal"), "ok");
  });

  it("R71: issuing refuses an empty name set and a key that is not the CA's", async () => {
    const ca = await makeMeshCa();
    const other = await makeMeshCa();
    await assert.rejects(issueBusCertificate(ca, []));
    await assert.rejects(issueBusCertificate({ certificate: ca.certificate, key: other.key }, NAMES));
  });

  it("R71: a certificate issued by a CA ending sooner than ten years ends with it, never after", async () => {
    const now = new Date();
    const ca = await makeMeshCa(new Date(now.getTime() - 19 * 365 * 24 * 3600 * 1000));
    const bus = await issueBusCertificate(ca, NAMES, now);
    assert.equal(new X509Certificate(certificatesOf(bus.certificate)[0]!).validTo, new X509Certificate(ca.certificate).validTo);
  });

  it("R71: a self-signed CA certificate and its key can be adopted as the mesh's CA; a certificate issued by one cannot", async () => {
    const ca = await makeMeshCa();
    // A key in SEC1 form ("EC PRIVATE KEY") is taken too, rewritten as PKCS#8.
    const sec1 = createPrivateKey(ca.key).export({ type: "sec1", format: "pem" }).toString();
    const adopted = adoptableCa(ca.certificate, sec1);
    assert.equal(adopted?.certificate, certificatesOf(ca.certificate)[0]);
    assert.match(adopted!.key, /BEGIN PRIVATE KEY/);
    await issueBusCertificate(adopted!, NAMES);
    const bus = await issueBusCertificate(ca, NAMES);
    assert.equal(adoptableCa(bus.certificate, bus.key), undefined);
  });
});
