/**
 * The `mesh` command line (bin/mesh.js runs this file with tsx). Configuration is read from the
 * environment once, by runCli through parseClientConfig; the exit code is runCli's.
 */
import { runCli } from "./run.ts";

// The reader of our output went away (`mesh ... | head`): nobody is left to tell, so stop quietly
// with the exit code so far, instead of an unhandled 'error' event and its stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
    // R76: output sent to a file on a full disk is lost, never the process (`mesh host 2>>file`).
    if (error.code === "ENOSPC" || error.code === "EDQUOT") return;
    throw error;
  });
}

process.exitCode = await runCli(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env });
