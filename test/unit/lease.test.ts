import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { decideLease, holderTick, leaseTimings, parseLeaseValue } from "../../src/bootstrap/lease.ts";

const LEASE = 3_000;
const NOW = 1_000_000;

describe("the controllers' lease (decideLease)", () => {
  it("R61: with no lease in the bucket, a controller creates it for itself, ending a lease from now", () => {
    assert.deepEqual(decideLease(null, "a", NOW, LEASE), { kind: "create", value: { holder: "a", expiresAt: NOW + LEASE } });
  });

  it("R61: the holder renews its own lease by compare-and-set on the revision it read", () => {
    const entry = { value: { holder: "a", expiresAt: NOW + 10 }, revision: 7 };
    assert.deepEqual(decideLease(entry, "a", NOW, LEASE), { kind: "update", revision: 7, value: { holder: "a", expiresAt: NOW + LEASE } });
  });

  it("R61: a standby waits while another's lease has time left, naming the holder and its end", () => {
    const entry = { value: { holder: "a", expiresAt: NOW + 1 }, revision: 7 };
    assert.deepEqual(decideLease(entry, "b", NOW, LEASE), { kind: "wait", holder: "a", expiresAt: NOW + 1 });
  });

  it("R61: once the lease's own time has passed, a standby takes it over on the revision it read (not waiting for the key to vanish)", () => {
    for (const expiresAt of [NOW, NOW - 1, 0]) {
      const entry = { value: { holder: "a", expiresAt }, revision: 9 };
      assert.deepEqual(decideLease(entry, "b", NOW, LEASE), { kind: "update", revision: 9, value: { holder: "b", expiresAt: NOW + LEASE } });
    }
  });

  it("R61: a deleted or unreadable lease is taken over on its revision", () => {
    assert.deepEqual(decideLease({ value: null, revision: 4 }, "b", NOW, LEASE), { kind: "update", revision: 4, value: { holder: "b", expiresAt: NOW + LEASE } });
    for (const text of ["", "not json", "{}", "{\"holder\":1,\"expiresAt\":2}", "{\"holder\":\"a\"}", "null"]) assert.equal(parseLeaseValue(text), null, text);
    assert.deepEqual(parseLeaseValue("{\"holder\":\"a\",\"expiresAt\":5}"), { holder: "a", expiresAt: 5 });
  });
});

describe("the lease's timing (R77: a failover is a pause of at most a few seconds)", () => {
  it("R77: the holder renews every third of the lease, a standby asks every 250 ms at most, and a lease request gives up within a third of the lease", () => {
    for (const leaseMs of [1_000, 2_000, 10_000]) {
      const t = leaseTimings(leaseMs);
      assert.equal(t.renewEveryMs, Math.floor(leaseMs / 3));
      assert.ok(t.pollEveryMs <= 250 && t.pollEveryMs >= 50, `${leaseMs}: poll ${t.pollEveryMs}`);
      assert.ok(t.requestTimeoutMs <= Math.floor(leaseMs / 3) && t.requestTimeoutMs >= 250, `${leaseMs}: timeout ${t.requestTimeoutMs}`);
    }
  });

  it("R61: the holder stops at its lease's own end even while a renewal is still unanswered", () => {
    assert.equal(holderTick({ now: NOW, expiresAt: NOW, renewing: true }), "lost");
    assert.equal(holderTick({ now: NOW, expiresAt: NOW, renewing: false }), "lost");
    assert.equal(holderTick({ now: NOW, expiresAt: NOW + 1, renewing: true }), "wait");
    assert.equal(holderTick({ now: NOW, expiresAt: NOW + 1, renewing: false }), "renew");
  });
});
