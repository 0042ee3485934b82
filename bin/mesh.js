#!/usr/bin/env node
// The `mesh` launcher: runs src/cli/main.ts under tsx (resolved from this package), passing the
// arguments, the streams and the exit code through.
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const tsx = pathToFileURL(createRequire(join(root, "package.json")).resolve("tsx")).href;
const child = spawn(process.execPath, ["--import", tsx, join(root, "src", "cli", "main.ts"), ...process.argv.slice(2)], {
  stdio: "inherit",
});
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
child.on("exit", (code, signal) => {
  process.exitCode = code ?? (signal ? 128 : 1);
});
