/**
 * R68: the CLI's memory of the highest records sequence the controller vouched for, a file beside
 * its credential (src/cli/seenFile.ts), without a server.
 */
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { seenFileOf, seenMemory } from "../../src/cli/seenFile.ts";

const TAG = "a".repeat(43);

describe("seenMemory (R68): the highest seen, beside the credential, durably", () => {
  let dir: string;
  before(() => { dir = mkdtempSync(join(tmpdir(), "mesh-seen-")); });
  after(() => { rmSync(dir, { recursive: true, force: true }); });

  it("R68: nothing kept reads undefined; a higher seen is written beside the credential (0600), a lower or equal one is not", () => {
    const credential = join(dir, "operator.json");
    const memory = seenMemory(credential);
    assert.equal(seenFileOf(credential), `${credential}.seen`);
    assert.equal(memory.read(), undefined);
    memory.keep({ sequence: 9, tag: TAG });
    assert.deepEqual(memory.read(), { sequence: 9, tag: TAG });
    assert.equal(statSync(seenFileOf(credential)).mode & 0o777, 0o600);
    memory.keep({ sequence: 4, tag: TAG.replace(/a/g, "b") });
    memory.keep({ sequence: 9, tag: TAG.replace(/a/g, "c") });
    assert.deepEqual(JSON.parse(readFileSync(seenFileOf(credential), "utf8")), { sequence: 9, tag: TAG }, "the highest stays");
    assert.deepEqual(seenMemory(credential).read(), { sequence: 9, tag: TAG }, "and a later run reads it");
  });

  it("R68: a damaged file reads undefined (the next reply writes it whole); a folder it cannot write to is said once, never thrown", () => {
    const credential = join(dir, "damaged.json");
    writeFileSync(seenFileOf(credential), "{\"sequence\": 3, \"ta");
    const memory = seenMemory(credential);
    assert.equal(memory.read(), undefined);
    memory.keep({ sequence: 3, tag: TAG });
    assert.deepEqual(memory.read(), { sequence: 3, tag: TAG });

    const locked = mkdtempSync(join(dir, "locked-"));
    chmodSync(locked, 0o500);
    try {
      const said: string[] = [];
      const readOnly = seenMemory(join(locked, "operator.json"), (line) => said.push(line));
      readOnly.keep({ sequence: 1, tag: TAG });
      readOnly.keep({ sequence: 2, tag: TAG });
      if (process.getuid?.() !== 0) assert.equal(said.length, 1, said.join("\n"));
    } finally {
      chmodSync(locked, 0o700);
    }
  });
});
