/**
 * Runs one suite of tests with node's test runner: `unit` (test/unit, no server) or `bus`
 * (test/bus, real nats-servers). Node 20 neither expands globs nor finds .ts tests by itself, so
 * the files are found here. Exits with the runner's own status.
 */
import { glob } from "tinyglobby";
import { spawnSync } from "node:child_process";

const suite = process.argv[2];
if (suite !== "unit" && suite !== "bus") {
  console.error("usage: tsx scripts/run-tests.ts unit|bus [name filter]");
  process.exit(2);
}
const filter = process.argv[3];
const files = (await glob([`test/${suite}/**/*.test.ts`])).filter((f) => !filter || f.includes(filter)).sort();
if (files.length === 0) {
  console.error(`no test files under test/${suite}${filter ? ` matching ${filter}` : ""}`);
  process.exit(1);
}
const args = ["--import", "tsx", "--test", "--test-reporter=spec", `--test-concurrency=${suite === "bus" ? 2 : 4}`, ...files];
const run = spawnSync(process.execPath, args, { stdio: "inherit" });
process.exit(run.status ?? 1);
