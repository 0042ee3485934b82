import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { commandIdReused } from "../../src/records/reuse.ts";
import type { Commit } from "../../src/events/index.ts";

const original: Commit = {
  commandId: "c1",
  entity: { kind: "module", id: "m" },
  events: [{ type: "CredentialRotated", actor: "operator-ada", commandId: "c1", at: "2026-01-01T00:00:00.000Z" } as unknown as Commit["events"][number]],
  request: { verb: "credential.rotate", digest: "d-rotate-m" },
};

describe("a command id names one command", () => {
  it("R53: the same verb and arguments is a duplicate (no refusal)", () => {
    assert.equal(commandIdReused(original, { verb: "credential.rotate", digest: "d-rotate-m" }), null);
  });
  it("R53: another verb is refused command-id-reused, naming the first verb and its entity", () => {
    const refusal = commandIdReused(original, { verb: "assign", digest: "d-assign" });
    assert.equal(refusal?.code, "command-id-reused");
    assert.equal(refusal?.field, "commandId");
    assert.ok(refusal?.message.includes("credential.rotate") && refusal.message.includes("module m"), refusal?.message);
  });
  it("R53: the same verb with other arguments is refused command-id-reused", () => {
    assert.equal(commandIdReused(original, { verb: "credential.rotate", digest: "d-rotate-n" })?.code, "command-id-reused");
  });
  it("R53: a commit recorded before requests were recorded is judged by nothing it lacks: a duplicate", () => {
    const { request: _dropped, ...old } = original;
    assert.equal(commandIdReused(old, { verb: "assign", digest: "d" }), null);
  });
});
