import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";

/**
 * Issue 28: no import circle inside src/cli/. The CLI's verb files take the verb kit (types,
 * busVerb, report) from one file that imports none of them; the list of verbs imports them all.
 * Static imports and re-exports count, type-only ones included (a circle of types is one a reader
 * still has to untangle); a dynamic `import()` does not (it loads on demand, e.g. main.ts's run.ts).
 */

const cliDir = new URL("../../src/cli/", import.meta.url);

/** Each file of `dir` and the files of the same folder it imports statically (`./x.ts`). */
function importsOf(dir: URL): Map<string, string[]> {
  const files = readdirSync(dir).filter((f) => f.endsWith(".ts"));
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const text = readFileSync(new URL(file, dir), "utf8");
    const targets = [...text.matchAll(/^\s*(?:import|export)\s[^;]*?\sfrom\s+["']\.\/([^"'/]+\.ts)["']/gm)].map((m) => m[1]!);
    graph.set(file, [...new Set(targets)].filter((t) => files.includes(t)));
  }
  return graph;
}

/** One circle of `graph` as the files along it (first repeated last), or null when there is none. */
export function findCircle(graph: ReadonlyMap<string, readonly string[]>): string[] | null {
  const state = new Map<string, "open" | "done">();
  const path: string[] = [];
  const visit = (file: string): string[] | null => {
    if (state.get(file) === "done") return null;
    if (state.get(file) === "open") return [...path.slice(path.indexOf(file)), file];
    state.set(file, "open");
    path.push(file);
    for (const next of graph.get(file) ?? []) {
      const circle = visit(next);
      if (circle) return circle;
    }
    path.pop();
    state.set(file, "done");
    return null;
  };
  for (const file of [...graph.keys()].sort()) {
    const circle = visit(file);
    if (circle) return circle;
  }
  return null;
}

describe("src/cli imports", () => {
  it("the circle finder finds a circle of three and none in a chain", () => {
    assert.deepEqual(findCircle(new Map([["a.ts", ["b.ts"]], ["b.ts", ["c.ts"]], ["c.ts", ["a.ts"]]])), ["a.ts", "b.ts", "c.ts", "a.ts"]);
    assert.equal(findCircle(new Map([["a.ts", ["b.ts"]], ["b.ts", ["c.ts"]], ["c.ts", []]])), null);
  });

  it("no file of src/cli imports, through others, a file that imports it", () => {
    const graph = importsOf(cliDir);
    assert.ok(graph.size >= 10, "src/cli was read");
    const circle = findCircle(graph);
    assert.equal(circle, null, `an import circle in src/cli: ${circle?.join(" -> ")}`);
  });
});
