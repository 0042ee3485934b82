/**
 * The `mesh` command line (bin/mesh.js imports this file built, from dist/, in its own process).
 * Configuration is read from the environment once, by runCli through parseClientConfig; the exit
 * code is runCli's.
 */
import { packageVersion } from "../files/packageFiles.ts";

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

const argv = process.argv.slice(2);
if (argv.length === 1 && (argv[0] === "--version" || argv[0] === "-V")) {
  // What runCli would print, without loading every verb and its libraries first (issue 29: a
  // `mesh --version` as cheap as starting node).
  process.stdout.write(`${packageVersion()}\n`);
} else {
  const { runCli } = await import("./run.ts");
  // Ctrl-C ends a `--watch` cleanly; every other verb keeps the default (the process ends at once).
  const onInterrupt = (stop: () => void): (() => void) => {
    for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, stop);
    return () => { for (const signal of ["SIGINT", "SIGTERM"] as const) process.off(signal, stop); };
  };
  process.exitCode = await runCli(argv, { stdout: process.stdout, stderr: process.stderr, env: process.env, onInterrupt });
}
