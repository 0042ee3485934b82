import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { duplicateNote, printable, renderHistory } from "../../src/cli/render.ts";
import { CLI_VERBS, pendingSeedNote } from "../../src/cli/verbs.ts";
import { renderPush } from "../../src/cli/push.ts";
import { EXIT_OK, type CliContext } from "../../src/cli/context.ts";
import type { NatsConnection } from "@nats-io/transport-node";

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

describe("mesh reports (found by a new-user trial)", () => {
  it("R55: prints each digest in the short form mesh nodes and mesh push print, not 64 characters", async () => {
    const digest = "ab".repeat(32);
    const lines: string[] = [];
    const nc = {
      info: undefined,
      request: async () => ({ string: () => JSON.stringify({ ok: true, reports: [{ node: "alpha", at: "2026-01-01T00:00:00.000Z", digest, ok: true }] }) }),
    } as unknown as NatsConnection;
    const ctx: CliContext = {
      io: { stdout: { write: () => undefined }, stderr: { write: () => undefined }, env: {} },
      config: { credentialFile: "unused", timeoutMs: 1_000 },
      globals: { credential: "unused", json: false, timeoutMs: 1_000 },
      connection: async () => nc,
      asker: () => "operator-test",
      out: (line) => { lines.push(line); },
      err: (line) => { lines.push(line); },
    };
    const reports = CLI_VERBS.find((v) => v.path.join(" ") === "reports")!;
    assert.equal(await reports.run(ctx, [], {}), EXIT_OK);
    const text = lines.join("\n");
    assert.ok(!text.includes(digest), text);
    assert.ok(text.includes(digest.slice(0, 12)), text);
    assert.ok(renderPush({
      pushId: "p", dryRun: false, recordsSequence: 1, nodes: [{ node: "alpha", outcome: "sent", digest }], leftOut: [], freshCredentials: [], freshProvisions: [], provisionsMinted: 0,
      raised: { created: 0, updated: 0, refused: [] }, timedOut: [], rounds: 1, boundHit: false,
    }).some((line) => line.includes(`${digest.slice(0, 12)} `) && !line.includes(digest)), "the short form is push's");
  });
});

// Found by an attacker's trial: a module's log reached the operator's terminal with its escape
// sequences (a forged screen, the window title, OSC 52 to the clipboard).
describe("printable: what a principal wrote, shown on a terminal", () => {
  it("every control character but tab and newline is shown as \\xHH; the rest is unchanged", () => {
    assert.equal(printable("\u001b]0;PWNED\u0007\u001b[2Jfake\tok\n"), "\\x1b]0;PWNED\\x07\\x1b[2Jfake\tok\n");
    assert.equal(printable("\u009b31m\u007f\r"), "\\x9b31m\\x7f\\x0d");
    for (let code = 0; code < 0x100; code++) {
      const c = String.fromCharCode(code);
      const control = (code < 0x20 && c !== "\t" && c !== "\n") || (code >= 0x7f && code <= 0x9f);
      assert.equal(printable(c) === c, !control, `U+${code.toString(16)}`);
    }
    assert.equal(printable("héllo ✓"), "héllo ✓");
  });
});
