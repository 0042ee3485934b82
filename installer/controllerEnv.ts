import { readFileSync } from "node:fs";

/**
 * The controller's configuration file in a mesh folder (written at genesis, installer/genesis.ts),
 * apart from genesis: the controller's daemon and `mesh controller` read it without loading
 * genesis's certificate code (issue 29).
 */

/** The controller's configuration in the mesh folder: MESH_* variables, 0600. */
export const CONTROLLER_ENV_FILE = "controller.env";

/** Parses a `KEY=value` env file (comments and blank lines skipped). Throws the file system's error. */
export function readEnvFile(file: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const trimmed = line.trim();
    if (!trimmed || trimmed.startsWith("#")) continue;
    const at = trimmed.indexOf("=");
    if (at > 0) env[trimmed.slice(0, at)] = trimmed.slice(at + 1);
  }
  return env;
}
