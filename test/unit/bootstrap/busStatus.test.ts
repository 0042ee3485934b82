import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { busStatusLine } from "../../../src/bootstrap/busStatus.ts";

/**
 * The controller's log of its connection (R62, R3): a reconnect names the server it reached, which
 * on a cluster is a survivor, not the first configured address (that one may be the dead server).
 */
describe("the controller's line for a bus connection event", () => {
  it("R62: a reconnect names the server the connection reached, not the first configured one", () => {
    const line = busStatusLine({ type: "reconnect", server: "127.0.0.1:4223" });
    assert.equal(line?.level, "info");
    assert.ok(line?.text.includes("127.0.0.1:4223"), line?.text);
  });

  it("R62: a disconnect names the server that was lost", () => {
    const line = busStatusLine({ type: "disconnect", server: "127.0.0.1:4222" });
    assert.ok(line?.text.includes("127.0.0.1:4222"), line?.text);
  });

  it("R3: an error is one line, its first", () => {
    const line = busStatusLine({ type: "error", error: new Error("first\nsecond") } as never, "127.0.0.1:4222");
    assert.equal(line?.level, "error");
    assert.ok(line?.text.includes("first") && !line.text.includes("second"), line?.text);
  });

  it("says nothing of the events it does not log (a ping)", () => {
    assert.equal(busStatusLine({ type: "ping", pendingPings: 1 } as never), undefined);
  });
});
