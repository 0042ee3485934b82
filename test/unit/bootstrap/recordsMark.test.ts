import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { appendFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MARK_LOG_BYTES, keptMark, readRecordsMark, recordsMarkPath, writeRecordsMark } from "../../../src/bootstrap/recordsMark.ts";

/**
 * R43, R54: the records' high-water mark is a log of lines appended and fsynced, read back as its
 * last whole line; a torn append (a power cut in the middle of one) is never taken for the mark.
 */
describe("R43: the records' mark kept in the controller's state folder", () => {
  let root: string;
  let n = 0;
  const fresh = () => mkdtempSync(join(root, `state-${(n += 1)}-`));
  before(() => { root = mkdtempSync(join(tmpdir(), "records-mark-")); });
  after(() => rmSync(root, { recursive: true, force: true }));

  it("R43: no file is no mark; a written mark reads back; the last written is the mark", () => {
    const dir = fresh();
    assert.equal(readRecordsMark(dir), null);
    writeRecordsMark(dir, { lastSequence: 7, streamCreated: "2026-01-01T00:00:00Z" });
    assert.deepEqual(readRecordsMark(dir), { lastSequence: 7, streamCreated: "2026-01-01T00:00:00Z" });
    writeRecordsMark(dir, { lastSequence: 8, streamCreated: "2026-01-01T00:00:00Z" });
    // A restore accepted moves the mark to records created anew, possibly lower: the last wins, not the highest.
    writeRecordsMark(dir, { lastSequence: 3, streamCreated: "2026-02-01T00:00:00Z" });
    assert.deepEqual(readRecordsMark(dir), { lastSequence: 3, streamCreated: "2026-02-01T00:00:00Z" });
    assert.equal(statSync(recordsMarkPath(dir)).mode & 0o777, 0o600);
  });

  it("R54: an advance appends one line to the mark's file (one fsync), not a rewrite of it", () => {
    const dir = fresh();
    for (let sequence = 1; sequence <= 5; sequence += 1) writeRecordsMark(dir, { lastSequence: sequence, streamCreated: "c" });
    const text = readFileSync(recordsMarkPath(dir), "utf8");
    assert.deepEqual(text.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line).lastSequence), [1, 2, 3, 4, 5]);
    assert.ok(text.endsWith("}\n"), "the last line ends with its newline");
  });

  it("R54: past MARK_LOG_BYTES the log is replaced by its last line, and still reads as the mark", () => {
    const dir = fresh();
    let sequence = 0;
    let largest = 0;
    while (sequence < 5000) {
      writeRecordsMark(dir, { lastSequence: (sequence += 1), streamCreated: "c" });
      largest = Math.max(largest, statSync(recordsMarkPath(dir)).size);
    }
    assert.ok(largest <= MARK_LOG_BYTES, `the log stays within ${MARK_LOG_BYTES} bytes (was ${largest})`);
    assert.ok(readFileSync(recordsMarkPath(dir), "utf8").split("\n").length < 5000, "it was replaced on the way");
    assert.deepEqual(readRecordsMark(dir), { lastSequence: 5000, streamCreated: "c" });
  });

  it("R43, R54: the running controller's log (keptMark) keeps its file open: each advance is one line, past MARK_LOG_BYTES it is replaced, and a file removed under it is written again", () => {
    const dir = fresh();
    const kept = keptMark(dir);
    const mark = (lastSequence: number) => ({ lastSequence, streamCreated: "2026-01-01T00:00:00Z" });
    for (let i = 1; i <= 5; i += 1) kept.onAdvance(mark(i));
    const lines = () => readFileSync(recordsMarkPath(dir), "utf8").split("\n").filter((line) => line !== "");
    assert.deepEqual(lines().map((line) => JSON.parse(line).lastSequence), [1, 2, 3, 4, 5], "appended, one line each");
    for (let i = 6; i <= 3000; i += 1) kept.onAdvance(mark(i));
    assert.ok(statSync(recordsMarkPath(dir)).size <= MARK_LOG_BYTES, "replaced on the way");
    assert.deepEqual(readRecordsMark(dir), mark(3000));
    rmSync(recordsMarkPath(dir));
    kept.onAdvance(mark(3001));
    assert.deepEqual(readRecordsMark(dir), mark(3001), "a mark file removed while open is written anew, not into the removed file");
    assert.equal(statSync(recordsMarkPath(dir)).mode & 0o777, 0o600);
    kept.stop();
    kept.onAdvance(mark(3002));
    assert.deepEqual(readRecordsMark(dir), mark(3002), "an advance after stop still lands");
    kept.stop();
  });

  it("R43, R54: a torn last append (no newline: a power cut in the middle of it) is not the mark; the line before it is", () => {
    const dir = fresh();
    writeRecordsMark(dir, { lastSequence: 41, streamCreated: "c" });
    writeRecordsMark(dir, { lastSequence: 42, streamCreated: "c" });
    appendFileSync(recordsMarkPath(dir), '{"lastSequence":43,"strea');
    assert.deepEqual(readRecordsMark(dir), { lastSequence: 42, streamCreated: "c" });
    // The next advance (the controller started again after the cut) is a whole line after the fragment.
    writeRecordsMark(dir, { lastSequence: 43, streamCreated: "c" });
    assert.deepEqual(readRecordsMark(dir), { lastSequence: 43, streamCreated: "c" });
    // A cut after the newline that starts a line, or before the one that ends it.
    appendFileSync(recordsMarkPath(dir), "\n");
    assert.deepEqual(readRecordsMark(dir), { lastSequence: 43, streamCreated: "c" });
    appendFileSync(recordsMarkPath(dir), '{"lastSequence":44,"streamCreated":"c"}');
    assert.deepEqual(readRecordsMark(dir), { lastSequence: 43, streamCreated: "c" });
  });

  it("R43: a mark written as one line by an earlier release reads as it was", () => {
    const dir = fresh();
    writeFileSync(recordsMarkPath(dir), `${JSON.stringify({ lastSequence: 9, streamCreated: "c" })}\n`);
    assert.deepEqual(readRecordsMark(dir), { lastSequence: 9, streamCreated: "c" });
  });

  it("R43: a file with no whole line, or whose last whole line is not a mark, is refused naming the file and a way out that needs no running controller (a new-user trial: it said to remove it after `mesh replay`, which needs one)", () => {
    for (const text of ["", "\n\n", '{"lastSequence":1', "not json\n", `${JSON.stringify({ lastSequence: 1, streamCreated: "c" })}\nnot json\n\n`, `${JSON.stringify({ lastSequence: -1, streamCreated: "c" })}\n`]) {
      const dir = fresh();
      writeFileSync(recordsMarkPath(dir), text);
      assert.throws(() => readRecordsMark(dir), (error: Error) => error.message.startsWith(`${recordsMarkPath(dir)}: not a records mark`) && !error.message.includes("mesh replay") && error.message.includes("move the file aside"), JSON.stringify(text));
    }
  });
});
