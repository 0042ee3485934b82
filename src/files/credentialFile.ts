import * as nodeFs from "node:fs";
import type { ZodError } from "zod";
import { BusCredential } from "../bus/connect.ts";
import { writeFileDurable, PRIVATE_FILE_MODE, type DurableFs } from "./durable.ts";

/**
 * The one reader and writer of credential files (R3, R54): JSON `{address, user, seed,
 * fingerprint?}` (`password` instead of `seed` in a file written before nkeys, R63) (BusCredential, DESIGN.md section 5a), written 0600 atomically and durably
 * (writeFileDurable), read and checked the same way everywhere: the controller's file, an
 * operator's, the pending `<file>.next` of a rotation, a node's `credential.json`.
 */

/** Why a credential file could not be read or written. `code` is stable; the message never holds the seed (R3). */
export class CredentialFileError extends Error {
  override readonly name = "CredentialFileError";
  /** `unreadable`: missing or not permitted; `not-json`; `invalid`: not the credential shape. */
  readonly code: "unreadable" | "not-json" | "invalid";
  /** The file. */
  readonly path: string;
  /** For `invalid`: the first bad field (an unknown key's name, or the field's path), else undefined. */
  readonly field: string | undefined;
  /** What is wrong, without the file's name: `no such file`, `is not JSON`, `field "user": ...`. */
  readonly reason: string;
  constructor(code: CredentialFileError["code"], path: string, reason: string, options?: { cause?: unknown; field?: string }) {
    super(
      code === "unreadable" ? `cannot read the credential file ${path}: ${reason}`
        : code === "not-json" ? `the credential file ${path} ${reason}` : `the credential file ${path}: ${reason}`,
      options?.cause === undefined ? undefined : { cause: options.cause },
    );
    this.code = code;
    this.path = path;
    this.reason = reason;
    this.field = options?.field;
  }
}

/** The first problem of a value that is not a BusCredential: the field and the schema's message. */
function invalid(path: string, error: ZodError): CredentialFileError {
  const issue = error.issues[0];
  const field = issue?.code === "unrecognized_keys" ? issue.keys[0] : issue?.path.join(".") || undefined;
  const reason = `field "${field ?? "?"}": ${issue?.message ?? "invalid"}`;
  return new CredentialFileError("invalid", path, reason, field === undefined ? {} : { field });
}

/** Caller settings of readBusCredential. */
export type ReadCredentialOptions = {
  /**
   * Turns the file's JSON into the credential before the shape is checked (a node's file may hold
   * the enrol reply it was given: host/keys credentialFrom opens it). Its errors pass through.
   */
  open?: (json: unknown) => unknown;
};

/**
 * Reads the credential file `path`. Throws CredentialFileError `unreadable` (missing, not
 * permitted), `not-json`, or `invalid` (naming the first bad field, never a value).
 */
export function readBusCredential(path: string, options: ReadCredentialOptions = {}): BusCredential {
  let text: string;
  try {
    text = nodeFs.readFileSync(path, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason = code === "ENOENT" ? "no such file" : code === "EACCES" ? "permission denied" : `cannot be read (${code ?? "error"})`;
    throw new CredentialFileError("unreadable", path, reason, { cause: error });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    // The parser's message may quote the text (the seed): only its kind is kept.
    throw new CredentialFileError("not-json", path, `is not JSON: it holds { "address", "user", "seed", "fingerprint" }`);
  }
  const parsed = BusCredential.safeParse(options.open ? options.open(json) : json);
  if (!parsed.success) throw invalid(path, parsed.error);
  return parsed.data;
}

/**
 * Writes `credential` to `path` as the credential file (pretty JSON, mode 0600 from creation,
 * atomically and durably, R54). Checks the shape first: throws CredentialFileError `invalid`
 * (nothing written) or the file system's error (the old file untouched).
 */
export function writeBusCredential(path: string, credential: BusCredential, fs?: DurableFs): void {
  const parsed = BusCredential.safeParse(credential);
  if (!parsed.success) throw invalid(path, parsed.error);
  writeFileDurable(path, `${JSON.stringify(parsed.data, null, 2)}\n`, { mode: PRIVATE_FILE_MODE, ...(fs ? { fs } : {}) });
}
