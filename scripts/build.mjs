// `npm run build`, and `prepare` (so `npm ci`, `npm pack` and an install of a clone run it):
// emits src/ and installer/ as JavaScript into dist/ (tsconfig.build.json), then bundles the
// processes `mesh` starts (the CLI, and `mesh up`'s daemons) into dist/bundled/mesh/ (issue 29).
// Type errors are `npm run typecheck`'s to report: the build emits without checking (--noCheck),
// a few seconds. Plain JavaScript: it runs before anything is built, tsx or not.
import { spawnSync } from "node:child_process";
import { cpSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const require = createRequire(import.meta.url);
let tsc;
try {
  tsc = require.resolve("typescript/bin/tsc");
} catch {
  // An install without the dev dependencies (`npm ci --omit=dev` in a clone) has no compiler: the
  // install goes on, and `mesh` says it is not built. A packed tarball ships dist/ already.
  console.error("mesh build: TypeScript is not installed (a dev dependency; left out by --omit=dev): dist/ is not built. `npm ci` installs it and builds.");
  process.exit(0);
}
rmSync(new URL("../dist", import.meta.url), { recursive: true, force: true });
const run = spawnSync(process.execPath, [tsc, "-p", "tsconfig.build.json", "--noCheck"], { cwd: root, stdio: "inherit" });
if (run.status !== 0) process.exit(run.status ?? 1);
// `mesh ui`'s page: plain files the compiler does not emit, found by packageFile from any build.
cpSync(new URL("../src/ui/static", import.meta.url), new URL("../dist/src/ui/static", import.meta.url), { recursive: true });
await bundle();

/**
 * The entries of packageFiles.ts BUNDLED_ENTRIES bundled with esbuild, code split (every
 * `await import()` a chunk of its own, loaded when reached), into dist/bundled/mesh/: a process
 * reads a few files instead of some 300 modules of dist/ and node_modules/, most of its start's CPU.
 * Without esbuild (it comes with tsx, a dev dependency) the launchers run dist/src/ as emitted.
 */
async function bundle() {
  let esbuild;
  try {
    esbuild = await import(require.resolve("esbuild"));
  } catch {
    console.error("mesh build: esbuild is not installed: mesh runs dist/src/ unbundled (slower to start)");
    return;
  }
  const { BUNDLED_ENTRIES, BUNDLE_DIR } = await import(new URL("../dist/src/files/packageFiles.js", import.meta.url).href);
  await esbuild.build({
    absWorkingDir: root,
    entryPoints: Object.entries(BUNDLED_ENTRIES).map(([source, name]) => ({ in: `dist/${source.replace(/\.ts$/, ".js")}`, out: name })),
    outdir: BUNDLE_DIR,
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: "node20",
    chunkNames: "chunk-[hash]",
    // The CommonJS packages bundled in ask `require` for node's own modules: an ES module has none.
    banner: { js: "import { createRequire as __meshRequire } from 'node:module'; const require = __meshRequire(import.meta.url);" },
    logLevel: "warning",
    plugins: [zodInEnglish()],
  });
}

/**
 * zod's messages in English only: its namespace re-exports every language's messages (`z.locales`,
 * some 300 kB of the 750 kB zod adds to each start), which mesh never asks for; English, its
 * default, stays (zod's schemas import locales/en.js themselves).
 */
function zodInEnglish() {
  return {
    name: "zod-in-english",
    setup(build) {
      build.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
        /[\\/]node_modules[\\/]zod[\\/]/.test(args.importer) ? { path: join(dirname(args.importer), "..", "locales", "en.js"), namespace: "zod-english" } : undefined);
      build.onLoad({ filter: /.*/, namespace: "zod-english" }, (args) => ({ contents: 'export { default as en } from "./en.js";', resolveDir: dirname(args.path), loader: "js" }));
    },
  };
}
