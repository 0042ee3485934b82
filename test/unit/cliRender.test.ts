import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { duplicateNote, renderHistory } from "../../src/cli/render.ts";
import { pendingSeedNote } from "../../src/cli/verbs.ts";

describe("cli render notes", () => {
  it("an unchanged reply says nothing new was written; a replacing registration names the version it replaced", () => {
    assert.deepEqual(duplicateNote({ ok: true, module: "echo" }), []);
    assert.match(duplicateNote({ ok: true, unchanged: true })[0] ?? "", /unchanged/);
    assert.match(duplicateNote({ ok: true, replaced: "1" })[0] ?? "", /replaced version 1/);
    assert.match(duplicateNote({ ok: true, duplicate: true, commandId: "c1" })[0] ?? "", /c1/);
  });
});

describe("mesh history's last line", () => {
  const event = (sequence: number) => ({ sequence, at: "2026-01-01T00:00:00.000Z", actor: "operator-admin", type: "NodeEnrolled", summary: "" });
  it("says a larger --limit shows more when --limit left events out (found by a new-user trial: it said 'for fewer')", () => {
    const lines = renderHistory({ entity: { kind: "node", id: "late" }, events: [event(3), event(4), event(5)], truncated: true, total: 4 });
    assert.match(lines.at(-1)!, /the newest 3 of 4 events: pass a larger --limit \(up to 500\) for more/);
  });
  it("does not offer --limit when the newest 500 were already answered", () => {
    const lines = renderHistory({ entity: { kind: "node", id: "big" }, events: Array.from({ length: 500 }, (_, i) => event(i + 1)), truncated: true, total: 900 });
    assert.doesNotMatch(lines.at(-1)!, /--limit/);
  });
});

describe("the note on the operator's own rotated seed (R50)", () => {
  it("R50: says the CLI dials the current seed until a push installs the new one, and switches during that push when run from here, else at the first verb after it", () => {
    const text = pendingSeedNote("/m/.mesh/operator.json.next").join("\n");
    assert.match(text, /operator\.json\.next/);
    assert.match(text, /during that push if you run it from here/);
    assert.match(text, /first verb after/);
    assert.ok(!/switches to it then/.test(text), text);
  });
});
