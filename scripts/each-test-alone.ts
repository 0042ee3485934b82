/**
 * Runs every test of the given files alone, by its exact title (BRIEF: "every test stands alone":
 * `node --import tsx --test --test-name-pattern "<title>" <file>` passes on its own). Slow (one
 * process, and often one nats-server, per test): not part of `npm test`.
 *
 *   npx tsx scripts/each-test-alone.ts test/bus/push.test.ts [more files...]
 *
 * Titles are listed by a run whose pattern matches nothing (node reports each test as skipped);
 * each test is then run with `^<title>$` and counts as passed only when it ran (not skipped) and
 * passed. Exits 1 when any test failed or did not run alone, naming them.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

type Finished = { event: "test:pass" | "test:fail"; name: string; nesting: number; suite: boolean; skip: boolean | string };

const REPORTER = fileURLToPath(new URL("./test-events-reporter.mjs", import.meta.url));
const NOTHING = "^\\b$NOTHING^";

function run(file: string, pattern: string): { status: number | null; finished: Finished[]; output: string } {
  const result = spawnSync(process.execPath, ["--import", "tsx", "--test", `--test-reporter=${REPORTER}`, "--test-name-pattern", pattern, file], {
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  const finished = result.stdout.split("\n").filter((line) => line.startsWith("{")).map((line) => JSON.parse(line) as Finished);
  return { status: result.status, finished, output: `${result.stdout}\n${result.stderr}` };
}

const escape = (title: string): string => title.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: npx tsx scripts/each-test-alone.ts <test file>...");
  process.exit(2);
}
const failed: string[] = [];
let passed = 0;
for (const file of files) {
  const titles = [...new Set(run(file, NOTHING).finished.filter((f) => !f.suite).map((f) => f.name))];
  for (const title of titles) {
    const { status, finished } = run(file, `^${escape(title)}$`);
    const own = finished.filter((f) => !f.suite && f.name === title);
    const ok = status === 0 && own.length > 0 && own.every((f) => f.event === "test:pass" && f.skip === false);
    console.log(`${ok ? "pass" : "FAIL"}  ${file}  ${title}`);
    if (ok) passed += 1;
    else failed.push(`${file}: ${title}`);
  }
}
console.log(`\n${passed} passed alone, ${failed.length} failed alone`);
for (const line of failed) console.log(`  FAIL ${line}`);
process.exit(failed.length === 0 ? 0 : 1);
