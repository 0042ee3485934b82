/**
 * Loaded before every test file by scripts/run-tests.ts (`--import`). A file whose process stays
 * alive after its last test (a connection, a timer or a child left open) would otherwise hold its
 * slot until the runner's file timeout (15 min) and fail with no name for what held it. After the
 * file's last test and hook, this gives the process EXIT_GRACE_MS to exit on its own; then it names
 * what is still open (Node's own resource names) and exits 1, so the file fails in seconds, saying why.
 */
import { after } from "node:test";
import { relative } from "node:path";

/** How long a test file's process may take to exit after its last test (ms). */
export const EXIT_GRACE_MS = 30_000;

after(() => {
  const timer = setTimeout(() => {
    const file = relative(process.cwd(), process.argv[1] ?? "?");
    const open = process.getActiveResourcesInfo().join(", ");
    process.stderr.write(`${file}: its process did not exit ${EXIT_GRACE_MS / 1000} s after its last test; still open (one Timeout is this guard's): ${open}\n`);
    process.exit(1);
  }, EXIT_GRACE_MS);
  // Unreferenced: it never keeps the process alive itself.
  timer.unref();
});
