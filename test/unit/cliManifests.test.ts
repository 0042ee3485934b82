import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { registrationSummary } from "../../src/cli/manifests.ts";
import type { AnyReply } from "../../src/contracts/verbs.ts";
import { report } from "../../src/cli/verbs.ts";
import { EXIT_REFUSED, type CliContext } from "../../src/cli/context.ts";
import { Manifest } from "../../src/manifest/manifest.ts";
import { refusalOfZodError } from "../../src/commands/validation.ts";

const refused: AnyReply = { ok: false, error: { code: "unknown-seat", message: "no seat" } };
const registered: AnyReply = { ok: true, module: "a", version: "1", declares: [], claims: [] };
const unchanged: AnyReply = { ok: true, module: "git", version: "1", declares: [], claims: [], unchanged: true };
const wouldAppend: AnyReply = { ok: true, dryRun: true, events: [{ type: "ModuleRegistered" }] };
const wouldAppendNothing: AnyReply = { ok: true, dryRun: true, events: [] };

describe("mesh module register's summary (registrationSummary)", () => {
  it("says nothing when every manifest was accepted, or only one was given", () => {
    assert.equal(registrationSummary([{ file: "a.json", reply: registered }, { file: "git.json", reply: unchanged }], false), undefined);
    assert.equal(registrationSummary([{ file: "b.json", reply: refused }], false), undefined);
  });

  it("names the others as unchanged when the records already said them, not as registered", () => {
    const summary = registrationSummary([{ file: "webapp2.json", reply: refused }, { file: "git.json", reply: unchanged }], false)!;
    assert.match(summary, /refused 1 of 2 \(webapp2\.json\)/);
    assert.match(summary, /the other was unchanged/);
    assert.doesNotMatch(summary, /registered/);
  });

  it("names which were registered and which unchanged when both happened", () => {
    const summary = registrationSummary([
      { file: "b.json", reply: refused }, { file: "a.json", reply: registered }, { file: "git.json", reply: unchanged },
    ], false)!;
    assert.match(summary, /refused 1 of 3 \(b\.json\)/);
    assert.match(summary, /registered .*a\.json/);
    assert.match(summary, /unchanged .*git\.json/);
  });

  it("says the others were registered when they were, and claims no others when all were refused", () => {
    assert.match(registrationSummary([{ file: "b.json", reply: refused }, { file: "a.json", reply: registered }], false)!, /the other was registered/);
    const all = registrationSummary([{ file: "b.json", reply: refused }, { file: "c.json", reply: refused }], false)!;
    assert.match(all, /refused 2 of 2 \(b\.json, c\.json\)/);
    assert.doesNotMatch(all, /other/);
  });

  it("with --dry-run says what would be: registered when events would be appended, unchanged when none", () => {
    const summary = registrationSummary([
      { file: "b.json", reply: refused }, { file: "a.json", reply: wouldAppend }, { file: "git.json", reply: wouldAppendNothing },
    ], true)!;
    assert.match(summary, /would be registered .*a\.json/);
    assert.match(summary, /would be unchanged .*git\.json/);
  });
});

describe("a refused manifest's line (found by a new-user trial)", () => {
  it("R23: names the bad field once, not `\"manifest.name\": \"manifest.name\": ...`", () => {
    const lines: string[] = [];
    const ctx = { globals: { json: false }, out: (line: string) => { lines.push(line); }, err: (line: string) => { lines.push(line); } } as unknown as CliContext;
    for (const manifest of [{ name: "", version: "1" }, { version: "1" }, { name: "a", version: "1", wat: 1 }]) {
      lines.length = 0;
      const parsed = Manifest.safeParse(manifest);
      assert.ok(!parsed.success);
      const error = refusalOfZodError(parsed.error, "invalid-manifest", "manifest");
      assert.equal(report(ctx, "module.register", { ok: false, error }), EXIT_REFUSED);
      const line = lines.join("\n");
      assert.equal(line.split(`"${error.field!}"`).length - 1, 1, line);
    }
  });
});
