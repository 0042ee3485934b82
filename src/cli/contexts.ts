/**
 * Named contexts (issue 29, as kubectl's): the user's configuration file,
 * `$XDG_CONFIG_HOME/mesh/config.json` (else `~/.config/mesh/config.json`), names each mesh this
 * person operates by the operator credential file to dial it with, and which one is current.
 * `mesh up` and `mesh genesis` register the mesh they make; `mesh context ...` lists and switches.
 *
 * Which credential file a verb dials with (resolveCredential), first that applies:
 * `--credential <file>`; MESH_CREDENTIAL; `--context <name>` or MESH_CONTEXT; the current folder's
 * `./.mesh/operator.json` when it exists (a mesh made here wins over the current context); the
 * current context; `./.mesh/operator.json` (which then does not exist, and the error says so).
 */
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { z } from "zod";
import { CONTEXT_NAME, DEFAULT_CREDENTIAL_FILE, type ClientConfig } from "../config.ts";
import { makeFolderDurable, writeFileDurable } from "../files/index.ts";
import { UsageError } from "./context.ts";
import { closestName } from "../names.ts";

/** The configuration file's name inside the user's mesh configuration folder. */
export const CONFIG_FILE = "config.json";

/** The user's configuration: named contexts (each an operator credential file) and the current one. */
export const MeshUserConfig = z.object({
  currentContext: z.string().regex(CONTEXT_NAME).optional(),
  contexts: z.record(z.string().regex(CONTEXT_NAME), z.object({ credential: z.string().min(1) }).strict()).default({}),
}).strict();
export type MeshUserConfig = z.infer<typeof MeshUserConfig>;

/** The configuration file in `configDir`. */
export function configFileOf(configDir: string): string {
  return join(configDir, CONFIG_FILE);
}

/**
 * The user's configuration in `configDir`: empty when there is no folder or no file. Throws
 * UsageError naming the file and the field when it is not JSON of MeshUserConfig's shape.
 */
export function readUserConfig(configDir: string | undefined): MeshUserConfig {
  if (configDir === undefined || !existsSync(configFileOf(configDir))) return { contexts: {} };
  const file = configFileOf(configDir);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw new UsageError(`${file}: not JSON (${error instanceof Error ? error.message : String(error)}): fix it or remove it`);
  }
  const parsed = MeshUserConfig.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new UsageError(`${file}: ${issue.path.join(".") || "the file"}: ${issue.message}: fix it or remove it`);
  }
  return parsed.data;
}

/** Writes the user's configuration into `configDir` (made when missing), durably, readable by the user alone. */
export function writeUserConfig(configDir: string, config: MeshUserConfig): void {
  makeFolderDurable(configDir);
  writeFileDurable(configFileOf(configDir), `${JSON.stringify(config, null, 2)}\n`);
}

/** Where a credential file was found, for `mesh context current` and error messages. */
export type CredentialSource = "--credential" | "MESH_CREDENTIAL" | "--context" | "MESH_CONTEXT" | "folder" | "current-context" | "default";

/** What resolveCredential needs: the CLI's settings, the flags typed, the user's configuration, and whether a file exists. */
export type CredentialQuestion = {
  config: Pick<ClientConfig, "credentialFile" | "credentialSet" | "context">;
  flag?: string;
  contextFlag?: string;
  user: MeshUserConfig;
  exists(file: string): boolean;
};

/**
 * The operator credential file to dial with, and where it came from (the order is the module
 * comment's). Pure but `exists`. Throws UsageError for a context that is not in the user's
 * configuration, naming the contexts there and the closest.
 */
export function resolveCredential(q: CredentialQuestion): { file: string; source: CredentialSource; context?: string } {
  if (q.flag !== undefined) return { file: q.flag, source: "--credential" };
  if (q.config.credentialSet === true) return { file: q.config.credentialFile, source: "MESH_CREDENTIAL" };
  const named = q.contextFlag ?? q.config.context;
  if (named !== undefined) {
    const source = q.contextFlag !== undefined ? "--context" : "MESH_CONTEXT";
    const found = q.user.contexts[named];
    if (found === undefined) throw unknownContext(named, source, q.user);
    return { file: found.credential, source, context: named };
  }
  if (q.exists(DEFAULT_CREDENTIAL_FILE)) return { file: DEFAULT_CREDENTIAL_FILE, source: "folder" };
  const current = q.user.currentContext;
  const found = current === undefined ? undefined : q.user.contexts[current];
  if (current !== undefined && found !== undefined) return { file: found.credential, source: "current-context", context: current };
  return { file: DEFAULT_CREDENTIAL_FILE, source: "default" };
}

/** The usage error of a context name that is none: the contexts there are, and the closest. */
export function unknownContext(name: string, given: string, user: MeshUserConfig): UsageError {
  const names = Object.keys(user.contexts).sort();
  const near = closestName(name, names);
  const there = names.length === 0 ? "there is none yet (`mesh up` or `mesh genesis` registers one; `mesh context add <name> <credential-file>` adds one)" : `one of ${names.join(", ")}`;
  return new UsageError(`${given} ${name}: no such context${near === undefined ? "" : ` (did you mean ${near}?)`}: ${there}`);
}

/** A context's name for the mesh at `address` (`tls://host:port`): `host-port`, as a context name takes it. Pure. */
export function contextNameOf(address: string): string {
  let host = address;
  let port = "";
  try {
    const url = new URL(address);
    host = url.hostname;
    port = url.port;
  } catch {
    // not a URL: its characters alone
  }
  const name = `${host}${port === "" ? "" : `-${port}`}`.replace(/[^A-Za-z0-9._@-]/g, "-").replace(/^[^A-Za-z0-9]+/, "");
  return name === "" ? "mesh" : name;
}

/** `config` with context `name` naming `credentialFile` (made absolute), and current. Pure. */
export function withContext(config: MeshUserConfig, name: string, credentialFile: string): MeshUserConfig {
  return { ...config, currentContext: name, contexts: { ...config.contexts, [name]: { credential: resolve(credentialFile) } } };
}

/**
 * Registers the mesh whose operator credential is `credentialFile` (at `address`) as the current
 * context of the user's configuration (`mesh up`, `mesh genesis`), and returns the line saying so;
 * null when there is no configuration folder (neither XDG_CONFIG_HOME nor HOME is set). Never
 * throws: a configuration that cannot be written is said in the line, the mesh is made all the same.
 */
export function registerContext(configDir: string | undefined, address: string, credentialFile: string): string | null {
  if (configDir === undefined) return null;
  const name = contextNameOf(address);
  try {
    writeUserConfig(configDir, withContext(readUserConfig(configDir), name, credentialFile));
    return `context ${name} is now current in ${configFileOf(configDir)}: mesh verbs anywhere dial this mesh (a folder's own .mesh/ first); \`mesh context list\` lists them`;
  } catch (error) {
    return `context ${name} not registered (${error instanceof Error ? error.message.split("\n")[0] : String(error)}): pass --credential ${credentialFile} instead`;
  }
}
