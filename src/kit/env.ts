import { readFileSync } from "node:fs";
import { parseEnvFile } from "../files/envFile.ts";
import type { EmitEntry, FollowEntry, SubmitEntry, ToolEntry, WorkEntry } from "../compose/environment.ts";

/**
 * A module's environment as the kit reads it: the `env` file its node's agent writes in the
 * module's folder (or the same variables in the process's environment, when the agent started it
 * with them), turned into the settings a module dials and works with. The variables are those of
 * src/compose/environment.ts (R57); the subjects, streams and consumers are the ones the mesh
 * granted, read from the env, never built here.
 */

/** An env file's text as key → value (files/envFile.ts: the one reader of the format). */
export { parseEnvFile as parseEnvText };

/** The file the agent writes in a module's folder. */
export const ENV_FILE = "env";

/** A setting the env lacks or holds in a shape the kit cannot use; `variable` names it. */
export class ModuleEnvError extends Error {
  override readonly name = "ModuleEnvError";
  readonly variable: string;
  constructor(variable: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.variable = variable;
  }
}

/** Reads the env file `file` (default `./env`, the module's folder) as key → value. Throws Node's error when it cannot be read. */
export function readModuleEnv(file: string = ENV_FILE): Record<string, string> {
  return parseEnvFile(readFileSync(file, "utf8"));
}

// The entries' shapes are the composer's own (one definition); a type import leaves nothing at run time.
export type { WorkEntry, SubmitEntry, EmitEntry, FollowEntry, ToolEntry };

/** Everything a module needs to dial the bus and use its seats, from its env. */
export type ModuleSettings = {
  /** `tls://host:port`: where its node reaches the bus. */
  address: string;
  host: string;
  port: number;
  /** Its bus user and nkey seed (the seed never leaves the process: it signs the bus's nonce). */
  user: string;
  seed: string;
  /** The mesh CA's certificate (PEM file): the bus is verified against it, names included (R71). */
  caFile: string;
  /** The only inbox prefix the bus lets it use (R33). */
  inboxPrefix: string;
  work: WorkEntry[];
  submits: SubmitEntry[];
  emits: EmitEntry[];
  follows: FollowEntry[];
  tools: ToolEntry[];
};

function required(env: Record<string, string | undefined>, variable: string): string {
  const value = env[variable];
  if (value === undefined || value === "") throw new ModuleEnvError(variable, `${variable} is not set: run the module in its folder (its env file) or with the env its node's agent gives it`);
  return value;
}

function jsonList<T>(env: Record<string, string | undefined>, variable: string): T[] {
  const text = env[variable];
  if (text === undefined || text === "") return [];
  try {
    const value: unknown = JSON.parse(text);
    if (Array.isArray(value)) return value as T[];
  } catch (error) {
    throw new ModuleEnvError(variable, `${variable} is not a JSON array (a quoting problem in the env file?)`, { cause: error });
  }
  throw new ModuleEnvError(variable, `${variable} is not a JSON array`);
}

/**
 * The settings of a module's env (parseEnvFile's result, or process.env). Throws ModuleEnvError
 * naming the variable that is missing or malformed: the address (`tls://host:port` only, R67), the
 * user, the seed, the CA file, the inbox prefix, or a list that is no JSON array.
 */
export function moduleSettings(env: Record<string, string | undefined>): ModuleSettings {
  const address = required(env, "MESH_BROKER_ADDRESS");
  const match = /^tls:\/\/(\[[^\]]+\]|[^:/]+):(\d+)$/.exec(address);
  if (!match) throw new ModuleEnvError("MESH_BROKER_ADDRESS", `MESH_BROKER_ADDRESS (${address}) is not tls://host:port: the mesh's bus is only dialled with TLS`);
  return {
    address, host: match[1]!.replace(/^\[(.*)\]$/, "$1"), port: Number(match[2]),
    user: required(env, "MESH_USER"),
    seed: required(env, "MESH_NKEY_SEED"),
    caFile: required(env, "MESH_BROKER_CERTIFICATE_FILE"),
    inboxPrefix: required(env, "MESH_INBOX_PREFIX"),
    work: jsonList<WorkEntry>(env, "MESH_WORK"),
    submits: jsonList<SubmitEntry>(env, "MESH_SUBMITS"),
    emits: jsonList<EmitEntry>(env, "MESH_EMITS"),
    follows: jsonList<FollowEntry>(env, "MESH_FOLLOWS"),
    tools: jsonList<ToolEntry>(env, "MESH_TOOLS"),
  };
}
