import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSecureContext } from "node:tls";
import { pinnedTlsOptions } from "../../../src/bus/pin.ts";
import { makeBusCertificate } from "../../../installer/tls.ts";

/**
 * R34: the TLS options a pinned connection hands to nats.js (which passes them to Node's
 * tls.connect at the first connect and at every reconnect).
 */
describe("R34: pinned TLS options", () => {
  let dir: string;
  let pem: string;
  let fingerprint: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "mesh-pin-"));
    const made = makeBusCertificate(dir, []);
    pem = readFileSync(made.certFile, "utf8");
    fingerprint = made.fingerprint;
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("R34: one secure context trusting only the pinned certificate, made once: a reconnect storm does not parse the PEM and build a context at every dial", () => {
    const options = pinnedTlsOptions(pem, fingerprint) as Record<string, unknown>;
    assert.equal(options.ca, undefined, "no `ca` for tls.connect to build a context from at each dial");
    assert.equal(Object.getPrototypeOf(options.secureContext), Object.getPrototypeOf(createSecureContext({})));
    assert.equal(options.rejectUnauthorized, true);
  });

  it("R34: the identity check compares the fingerprint, in any case, and refuses another", () => {
    const check = (pinnedTlsOptions(pem, fingerprint.toLowerCase()) as { checkServerIdentity: (host: string, cert: { fingerprint256: string }) => Error | undefined }).checkServerIdentity;
    assert.equal(check("bus.example", { fingerprint256: fingerprint }), undefined);
    // Another fingerprint for certain: its first hex digit changed (a fixed "00" was the same 1 time in 256).
    const other = `${fingerprint[0] === "0" ? "1" : "0"}${fingerprint.slice(1)}`;
    assert.ok(check("bus.example", { fingerprint256: other }) instanceof Error);
  });
});
