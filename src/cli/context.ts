import { existsSync } from "node:fs";
import type { NatsConnection } from "@nats-io/transport-node";
import { BusConnectError, BusCredential, connectToBus, secretOf, type BusConnectOptions } from "../bus/connect.ts";
import { pendingCredentialFile } from "../controller/credential.ts";
import { connectWithCredentialFile as dialWithCredentialFile } from "../client/dial.ts";
import { CredentialFileError, readBusCredential } from "../files/index.ts";
import type { OutputFormat } from "./output.ts";
import { meshClient, type MeshClient } from "../client/client.ts";
import { seenMemory } from "./seenFile.ts";
import { DEFAULT_CREDENTIAL_FILE, type ClientConfig, type Environment } from "../config.ts";

/** Exit codes of `mesh`: 0 ok, 1 refused by the controller, 2 usage or connection error. */
export const EXIT_OK = 0;
export const EXIT_REFUSED = 1;
export const EXIT_USAGE = 2;

/** Where the CLI writes and what it reads: process streams in main.ts, buffers in tests. */
export type CliIo = {
  /** `isTTY` and `columns`: a terminal's width, which tables fit (process.stdout has them). */
  stdout: { write(text: string): unknown; isTTY?: boolean; columns?: number };
  /** `isTTY`: a terminal (process.stderr has it); `mesh push` shows progress there. */
  stderr: { write(text: string): unknown; isTTY?: boolean };
  env: Environment;
  /**
   * Calls `stop` on Ctrl-C (SIGINT, SIGTERM) until the returned function is called: how a
   * `--watch` ends cleanly. Absent (tests in one process): a watch ends when its connection closes.
   */
  onInterrupt?(stop: () => void): () => void;
};

/** The options several verbs share; each verb names those it uses (its --help shows only those). */
export type GlobalOptionName = "credential" | "json" | "timeout" | "commandId";

/** A query's shared options: dial with the operator's credential, wait for the reply, print JSON. */
export const QUERY_GLOBALS: readonly GlobalOptionName[] = ["credential", "json", "timeout"];
/** A command's: a query's, and the command id that makes a retry append nothing. */
export const COMMAND_GLOBALS: readonly GlobalOptionName[] = [...QUERY_GLOBALS, "commandId"];

/** The --dry-run option of every verb that changes the records. */
export const DRY_RUN_OPTION: { flags: string; description: string } = { flags: "--dry-run", description: "decide without writing: print the events it would append, append nothing" };

/** The shared options' values (a verb that does not take one gets its configured default). */
export type GlobalOptions = {
  /** The operator's credential file. */
  credential: string;
  /** Print the reply as data (`-o json|yaml|name`, src/cli/output.ts) instead of readable lines. */
  json: boolean;
  /** How to print (`-o`); absent: `text`, or `json` when `json` is set. */
  output?: OutputFormat;
  /** Milliseconds to wait for the controller. */
  timeoutMs: number;
  /** Command id to send (a retry with the same id appends nothing). */
  commandId?: string;
};

/** What a verb's run gets: output, options, and a lazily opened bus connection. */
export type CliContext = {
  io: CliIo;
  config: ClientConfig;
  globals: GlobalOptions;
  /** The bus connection with the operator's credential; opened on first use, closed by runCli. */
  connection(): Promise<NatsConnection>;
  /** The bus user of the operator's credential: the principal its commands are sent as (R51). */
  asker(): string;
  /** Writes one line to stdout. */
  out(line: string): void;
  /** Writes one line to stderr. */
  err(line: string): void;
};

/** The typed client (src/client) over the CLI's connection, as its asker, with its --timeout. */
export async function clientOf(ctx: CliContext): Promise<MeshClient> {
  return meshClient(await ctx.connection(), ctx.asker(), { timeoutMs: ctx.globals.timeoutMs }, seenMemory(ctx.globals.credential, ctx.err));
}

/** A mistake of the caller (arguments, files): exit 2 with this message on stderr. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

/**
 * The usage error of one verb, worded as every verb words one: `<verb>: <what>: <message>`, where
 * `verb` is its words or its bus name (`credential.rotate` reads `credential rotate`) and `what`
 * the argument or option as the person typed it (left out when undefined). runCli prints it after
 * `mesh: `, so the message itself never starts with `mesh`.
 */
export function verbUsageError(verb: string, what: string | undefined, message: string): UsageError {
  return new UsageError(`${verb.split(".").join(" ")}: ${what === undefined ? "" : `${what}: `}${message}`);
}

/**
 * Reads and validates a credential file, JSON `{ address, user, seed, fingerprint }`.
 * Throws UsageError naming the file and the bad field (never the seed's value).
 */
export function loadCredential(file: string): BusCredential {
  try {
    return readBusCredential(file);
  } catch (error) {
    if (!(error instanceof CredentialFileError)) throw error;
    if (error.code === "unreadable") throw new UsageError(`cannot read the credential file ${file}: pass --credential <file> or set MESH_CREDENTIAL`);
    throw new UsageError(error.message);
  }
}

/**
 * connectWithCredentialFile of src/client/dial.ts (R50), the file read by loadCredential: an
 * unreadable file is a UsageError naming it and how to pass another.
 */
export async function connectWithCredentialFile(file: string, options: BusConnectOptions): Promise<NatsConnection> {
  return dialWithCredentialFile(file, options, loadCredential);
}

/**
 * R50: whether the bus refuses the key in the credential file `file` now (Authorization Violation),
 * dialled once with that key alone, never the pending one beside it: how a verb whose connection
 * the bus closed under it tells "a rotation took this key away" (the bus closes such a connection
 * at the reload without always getting its reason to the client). False when the bus admits the
 * key, or the dial fails otherwise (the bus away says nothing of the key).
 */
export async function busRefusesKeyOf(file: string, timeoutMs: number): Promise<boolean> {
  try {
    const nc = await connectToBus(loadCredential(file), { name: "mesh-cli", reconnect: false, timeoutMs });
    await nc.close();
    return false;
  } catch (error) {
    return error instanceof BusConnectError && error.kind === "unauthorized";
  }
}

/**
 * R50: after the bus stopped admitting the key of the credential file `file` (a rotation took it
 * away), the credential file to dial with now: the first of `file`, `configured` (MESH_CREDENTIAL's
 * or the default, when it is another) and `fallback` (the default, DEFAULT_CREDENTIAL_FILE: where
 * the operator's own file lives when MESH_CREDENTIAL names a copy) that holds another key of
 * the same bus user, in itself (`pending` false) or beside it as `<file>.next` (`pending` true:
 * where `mesh credential rotate operator <me>` keeps the new seed, dialled when the file's own key
 * is refused). Undefined when none does (the new seed was kept beside a file elsewhere). Reads the
 * files; an unreadable one is passed over.
 */
export function credentialFileNow(file: string, configured: string, fallback: string = DEFAULT_CREDENTIAL_FILE): { file: string; pending: boolean } | undefined {
  let refused: BusCredential;
  try {
    refused = loadCredential(file);
  } catch {
    return undefined;
  }
  const another = (path: string): boolean => {
    if (!existsSync(path)) return false;
    try {
      const read = loadCredential(path);
      return read.user === refused.user && secretOf(read) !== secretOf(refused);
    } catch {
      return false;
    }
  };
  for (const candidate of new Set([file, configured, fallback])) {
    if (another(candidate)) return { file: candidate, pending: false };
    if (another(pendingCredentialFile(candidate))) return { file: candidate, pending: true };
  }
  return undefined;
}
