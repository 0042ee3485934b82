import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSecureContext } from "node:tls";
import { caTlsOptions, pinnedCertificateOf } from "../../../src/bus/pin.ts";
import { makeBusCertificate } from "../../../installer/tls.ts";
import { certificatesOf } from "../../../src/crypto/ca.ts";
import { certificateFingerprint } from "../../../src/crypto/secrets.ts";

/**
 * R34 R71: the TLS options a mesh client hands to nats.js (which passes them to Node's
 * tls.connect at the first connect and at every reconnect), and the CA a pin picks from the chain.
 */
describe("R34 R71: CA-verified TLS options", () => {
  let dir: string;
  let caPem: string;
  let chain: Array<{ fingerprint: string; pem: string }>;
  let fingerprint: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "mesh-pin-"));
    const made = await makeBusCertificate(dir, []);
    caPem = readFileSync(made.caFile, "utf8");
    chain = certificatesOf(readFileSync(made.certFile, "utf8")).map((pem) => ({ pem, fingerprint: certificateFingerprint(pem) }));
    fingerprint = made.fingerprint;
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("R34: one secure context trusting only the CA, made once: a reconnect storm does not parse the PEM and build a context at every dial", () => {
    const options = caTlsOptions(caPem) as Record<string, unknown>;
    assert.equal(options.ca, undefined, "no `ca` for tls.connect to build a context from at each dial");
    assert.equal(Object.getPrototypeOf(options.secureContext), Object.getPrototypeOf(createSecureContext({})));
    assert.equal(options.rejectUnauthorized, true);
    assert.equal(options.checkServerIdentity, undefined, "R71: Node's own name check, no pin in its place");
  });

  it("R71: the pin (the CA's fingerprint, in any case) picks the CA from the presented chain, and nothing else", () => {
    assert.equal(fingerprint, certificateFingerprint(caPem), "genesis pins the CA");
    const presented = { ...chain[0]!, chain };
    assert.equal(pinnedCertificateOf(presented, fingerprint.toLowerCase())?.pem, chain[1]!.pem);
    const other = `${fingerprint[0] === "0" ? "1" : "0"}${fingerprint.slice(1)}`;
    assert.equal(pinnedCertificateOf(presented, other), undefined);
  });
});
