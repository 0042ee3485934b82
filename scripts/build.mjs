// `npm run build`, and `prepare` (so `npm ci`, `npm pack` and an install of a clone run it):
// emits src/ and installer/ as JavaScript into dist/ (tsconfig.build.json), what bin/mesh.js runs.
// Type errors are `npm run typecheck`'s to report: the build emits without checking (--noCheck),
// a few seconds. Plain JavaScript: it runs before anything is built, tsx or not.
import { spawnSync } from "node:child_process";
import { cpSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
let tsc;
try {
  tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
} catch {
  // An install without the dev dependencies (`npm ci --omit=dev` in a clone) has no compiler: the
  // install goes on, and `mesh` says it is not built. A packed tarball ships dist/ already.
  console.error("mesh build: TypeScript is not installed (a dev dependency; left out by --omit=dev): dist/ is not built. `npm ci` installs it and builds.");
  process.exit(0);
}
rmSync(new URL("../dist", import.meta.url), { recursive: true, force: true });
const run = spawnSync(process.execPath, [tsc, "-p", "tsconfig.build.json", "--noCheck"], { cwd: root, stdio: "inherit" });
// `mesh ui`'s page: plain files the compiler does not emit, served from beside the server's code.
if (run.status === 0) cpSync(new URL("../src/ui/static", import.meta.url), new URL("../dist/src/ui/static", import.meta.url), { recursive: true });
process.exit(run.status ?? 1);
