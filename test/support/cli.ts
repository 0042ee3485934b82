/**
 * Runs the `mesh` CLI in the test's own process, as a person would from a shell, and keeps what it
 * printed: one runner for every bus test that drives the CLI.
 */
import { runCli } from "../../src/cli/run.ts";
import type { CliIo } from "../../src/cli/context.ts";

/** One CLI run: its exit code, what it wrote to stdout and stderr, and stdout parsed as JSON. */
export type CliRun = { code: number; out: string; err: string; json(): Record<string, unknown> };

/**
 * Runs `mesh <argv>` with `env` as its whole environment (e.g. `{ MESH_CREDENTIAL: file }`).
 * Never throws for a non-zero exit: the code is in the result. `json()` throws a SyntaxError when
 * stdout is not JSON.
 */
export async function runMesh(argv: readonly string[], env: Record<string, string> = {}): Promise<CliRun> {
  let out = "";
  let err = "";
  const io: CliIo = {
    stdout: { write: (text: string) => { out += text; } },
    stderr: { write: (text: string) => { err += text; } },
    env,
  };
  const code = await runCli(argv, io);
  return { code, out, err, json: () => JSON.parse(out) as Record<string, unknown> };
}
