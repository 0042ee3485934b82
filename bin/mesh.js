#!/usr/bin/env node
// The `mesh` launcher: runs the built CLI (dist/, which `npm ci`, `npm pack` and an install of a
// clone build at `prepare`) in this very process: no second node, no TypeScript compiled per run.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

// The bundle (scripts/build.mjs: a few files to read), else the CLI as the compiler emitted it.
const bundled = new URL("../dist/bundled/mesh/main.js", import.meta.url);
const main = existsSync(bundled) ? bundled : new URL("../dist/src/cli/main.js", import.meta.url);
if (existsSync(main)) {
  await import(main.href);
} else {
  const root = fileURLToPath(new URL("..", import.meta.url));
  process.stderr.write(`mesh: this copy of mesh is not built (no ${fileURLToPath(main)}): run \`npm run build\` in ${root} (\`npm ci\` there builds it too; it needs the dev dependencies)\n`);
  process.exitCode = 2;
}
