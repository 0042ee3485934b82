/**
 * R65 (issues 25, 26): a subscriber's handler is total, and what it drops costs one bounded line,
 * rate-limited per reason: a flood of one kind is a few lines, then one count per interval.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { DROP_LINE_CHARS, QUOTED_CHARS, boundedText, dropLogger, dropsOf, errorLine, total } from "../../../src/bus/total.ts";

describe("R65: total handlers and bounded drop lines", () => {
  it("R65: a handler that throws or rejects is made total: its error goes to the drop callback with its arguments", async () => {
    const dropped: Array<[string, number]> = [];
    const sync = total((n: number) => { throw new Error(`bad ${n}`); }, (error, n) => { dropped.push([(error as Error).message, n]); });
    const async = total(async (n: number) => { await Promise.resolve(); throw new RangeError(`deep ${n}`); }, (error, n) => { dropped.push([(error as Error).message, n]); });
    await sync(1);
    await async(2);
    assert.deepEqual(dropped, [["bad 1", 1], ["deep 2", 2]]);
    const silent = total(() => { throw new Error("x"); }, () => { throw new Error("the drop callback fails too"); });
    await silent();
  });

  it("R65: a flood of one reason writes perInterval lines, then one count per interval; other reasons are limited apart", () => {
    let now = 0;
    const lines: string[] = [];
    const drop = dropLogger((line) => lines.push(line), { perInterval: 2, intervalMs: 1_000, now: () => now });
    for (let i = 0; i < 1_000; i += 1) drop("subject", `message ${i} dropped`);
    drop("contract", "another kind dropped");
    assert.equal(lines.length, 4, lines.join("\n"));
    assert.deepEqual(lines.slice(0, 2), ["message 0 dropped", "message 1 dropped"]);
    assert.match(lines[2]!, /counted/);
    assert.equal(lines[3], "another kind dropped");
    now = 1_500;
    drop("subject", "message 1000 dropped");
    assert.match(lines[4]!, /^dropped 998 more like this \(subject\)/);
    assert.equal(lines[5], "message 1000 dropped");
  });

  it("R65: a drop line is one line of at most DROP_LINE_CHARS, whatever it quotes", () => {
    const lines: string[] = [];
    const drop = dropLogger((line) => lines.push(line));
    drop("huge", `a message on ${"x".repeat(1024 * 1024)}\nsecond line`);
    assert.ok(lines[0]!.length <= DROP_LINE_CHARS + 32, `${lines[0]!.length} chars`);
    assert.ok(!lines[0]!.includes("\n"));
    assert.ok(boundedText("y".repeat(10_000)).length <= QUOTED_CHARS + 32);
    assert.ok(errorLine(new Error(`${"z".repeat(10_000)}\nmore`)).length <= QUOTED_CHARS + 32);
    assert.equal(errorLine({ toString() { throw new Error("no"); } }), "an error that cannot be described");
  });

  it("R65: every subscriber writing to one log shares one limiter (dropsOf)", () => {
    const lines: string[] = [];
    const log = { info: (line: string) => { lines.push(line); } };
    for (let i = 0; i < 100; i += 1) dropsOf(log)("shared", `drop ${i}`);
    assert.equal(dropsOf(log), dropsOf(log));
    assert.ok(lines.length <= 6, lines.join("\n"));
  });
});
