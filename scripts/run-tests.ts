/**
 * Runs one suite of tests with node's test runner: `unit` (test/unit, no server) or `bus`
 * (test/bus, real nats-servers), with a configuration folder of the run's own. Node 20 neither
 * expands globs nor finds .ts tests by itself, so the files are found here. Exits with the
 * runner's own status.
 */
import { glob } from "tinyglobby";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

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
// A test that hangs fails after TEST_TIMEOUT_MS (the longest bus file takes about two minutes here), naming itself, instead of holding the suite (and
// CI's time) until it is killed: one bus test waited on a cluster for ten idle minutes once.
const TEST_TIMEOUT_MS = 15 * 60_000;
// Every file runs with the exit guard: a file that does not exit after its last test fails in 30 s naming what is open.
const args = ["--import", "tsx", "--import", "./test/support/exitGuard.ts", "--test", "--test-reporter=spec", `--test-concurrency=${suite === "bus" ? 2 : 4}`, `--test-timeout=${TEST_TIMEOUT_MS}`, ...files];
// The `mesh up` and `mesh genesis` under test register their meshes as contexts in the user's
// configuration (src/cli/contexts.ts): the run gets a folder of its own, so the user's `mesh`
// still dials the user's own mesh afterwards, not a test's stopped one.
const configHome = mkdtempSync(join(tmpdir(), "mesh-test-config-"));
const run = spawnSync(process.execPath, args, { stdio: "inherit", env: { ...process.env, XDG_CONFIG_HOME: configHome } });
rmSync(configHome, { recursive: true, force: true });
process.exit(run.status ?? 1);
