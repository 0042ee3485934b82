/**
 * The `mesh` command line (bin/mesh.js runs this file with tsx). Configuration is read from the
 * environment once, by runCli through parseClientConfig; the exit code is runCli's.
 */
import { runCli } from "./run.ts";

process.exitCode = await runCli(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env });
