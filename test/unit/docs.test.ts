/**
 * The documents a newcomer reads (issue 28): every rule id the code and the tests cite is stated
 * in docs/rules.md.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { glob } from "tinyglobby";

const RULE_ID = /\bR(\d+)\b/g;
/** A rule's entry in docs/rules.md: a list item opening with its bold id, `- **R14.** ...`. */
const RULE_ENTRY = /^- \*\*R(\d+)\.\*\*/gm;

/** Rule numbers cited in the given text, as numbers. */
function citedRules(text: string): number[] {
  return [...text.matchAll(RULE_ID)].map((m) => Number(m[1]));
}

describe("the docs", () => {
  it("every rule id cited in src/ and test/ has its entry in docs/rules.md", async () => {
    const files = await glob(["src/**/*.ts", "test/**/*.ts"]);
    const cited = new Map<number, string>();
    for (const file of files) for (const id of citedRules(readFileSync(file, "utf8"))) if (!cited.has(id)) cited.set(id, file);
    assert.ok(cited.size > 30, `rule ids found in src/ and test/: ${cited.size}`);
    assert.ok(existsSync("docs/rules.md"), "docs/rules.md exists");
    const stated = new Set([...readFileSync("docs/rules.md", "utf8").matchAll(RULE_ENTRY)].map((m) => Number(m[1])));
    const missing = [...cited].filter(([id]) => !stated.has(id)).map(([id, file]) => `R${id} (cited in ${file})`);
    assert.deepEqual(missing, [], "each cited rule is a `- **R<n>.**` entry of docs/rules.md");
  });
});
