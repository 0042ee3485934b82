/**
 * The documents a newcomer reads (issue 28): every rule id the code and the tests cite is stated
 * in docs/rules.md, the README stays short, and no relative link in the docs points at nothing.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
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

  it("the README is a short page: under 300 lines", () => {
    const lines = readFileSync("README.md", "utf8").split("\n").length;
    assert.ok(lines < 300, `README.md has ${lines} lines`);
  });

  it("every relative link in README.md and docs/ names a file that exists", async () => {
    const pages = ["README.md", ...(await glob(["docs/**/*.md"]))];
    const broken: string[] = [];
    for (const page of pages) {
      for (const m of readFileSync(page, "utf8").matchAll(/\]\(([^)\s#]+)(?:#[^)]*)?\)/g)) {
        const target = m[1]!;
        if (/^[a-z]+:/.test(target)) continue;
        if (!existsSync(join(dirname(page), target))) broken.push(`${page} -> ${target}`);
      }
    }
    assert.deepEqual(broken, []);
  });
});
