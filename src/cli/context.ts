import { readFileSync } from "node:fs";
import type { NatsConnection } from "@nats-io/transport-node";
import { BusCredential } from "../bus/connect.ts";
import type { ClientConfig, Environment } from "../config.ts";

/** Exit codes of `mesh`: 0 ok, 1 refused by the controller, 2 usage or connection error. */
export const EXIT_OK = 0;
export const EXIT_REFUSED = 1;
export const EXIT_USAGE = 2;

/** Where the CLI writes and what it reads: process streams in main.ts, buffers in tests. */
export type CliIo = {
  stdout: { write(text: string): unknown };
  /** `isTTY`: a terminal (process.stderr has it); `mesh push` shows progress there. */
  stderr: { write(text: string): unknown; isTTY?: boolean };
  env: Environment;
};

/** Options every verb takes. */
export type GlobalOptions = {
  /** The operator's credential file. */
  credential: string;
  /** Print the reply JSON instead of readable lines. */
  json: boolean;
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

/** A mistake of the caller (arguments, files): exit 2 with this message on stderr. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

/**
 * Reads and validates a credential file, JSON `{ address, user, password, fingerprint }`.
 * Throws UsageError naming the file and the bad field (never the password's value).
 */
export function loadCredential(file: string): BusCredential {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    throw new UsageError(`cannot read the credential file ${file}: pass --credential <file> or set MESH_CREDENTIAL`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new UsageError(`the credential file ${file} is not JSON: it holds { "address", "user", "password", "fingerprint" }`);
  }
  const parsed = BusCredential.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.code === "unrecognized_keys" ? issue.keys[0] : issue?.path.join(".");
    throw new UsageError(`the credential file ${file}: field "${field ?? "?"}": ${issue?.message ?? "invalid"}`);
  }
  return parsed.data;
}
