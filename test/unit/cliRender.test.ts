import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { duplicateNote } from "../../src/cli/render.ts";

describe("cli render notes", () => {
  it("an unchanged reply says nothing new was written; a replacing registration names the version it replaced", () => {
    assert.deepEqual(duplicateNote({ ok: true, module: "echo" }), []);
    assert.match(duplicateNote({ ok: true, unchanged: true })[0] ?? "", /unchanged/);
    assert.match(duplicateNote({ ok: true, replaced: "1" })[0] ?? "", /replaced version 1/);
    assert.match(duplicateNote({ ok: true, duplicate: true, commandId: "c1" })[0] ?? "", /c1/);
  });
});
