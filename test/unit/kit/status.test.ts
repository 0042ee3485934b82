import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { Status } from "@nats-io/transport-node";
import { redeliveryDelayMs, statusLine } from "../../../src/kit/module.ts";

/** The kit's bus status lines (a module's log says when the bus refused or dropped it, R73). */
describe("kit: bus status lines", () => {
  it("R73 kit: a refusal, a disconnect and a reconnect are one line each; pings are not logged", () => {
    assert.equal(statusLine({ type: "error", error: new Error("'Authorization Violation'") }), "mesh-kit: bus error: 'Authorization Violation'");
    assert.equal(statusLine({ type: "disconnect", server: "127.0.0.1:4222" }), "mesh-kit: bus disconnect: 127.0.0.1:4222");
    assert.equal(statusLine({ type: "reconnect", server: "127.0.0.1:4222" }), "mesh-kit: bus reconnect: 127.0.0.1:4222");
    assert.equal(statusLine({ type: "close" }), "mesh-kit: bus close");
    assert.equal(statusLine({ type: "ping", pendingPings: 1 }), undefined);
  });

  it("R73 kit: a long or multi-line server error is one bounded line", () => {
    const line = statusLine({ type: "error", error: new Error(`bad\n${"x".repeat(5_000)}`) } as Status)!;
    assert.ok(line.length <= 200, `${line.length} chars`);
    assert.equal(line.includes("\n"), false);
  });

  it("kit: an item whose handler threw comes again after 1 s, doubled per delivery, at most a minute", () => {
    assert.deepEqual([1, 2, 3, 4, 6, 7, 8, 100].map(redeliveryDelayMs), [1_000, 2_000, 4_000, 8_000, 32_000, 60_000, 60_000, 60_000]);
    assert.equal(redeliveryDelayMs(0), 1_000);
  });
});
