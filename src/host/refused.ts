/**
 * Why a host refuses a declaration, by a stable `code` (R29, R69): a name that is not a safe file
 * name, a secret sealed to another key, a file or the whole over its bound, a link the host did not
 * make where it would write or remove, a path taken by something else than a file or folder, or a
 * module credential naming a bus without TLS (R67).
 */
export type RefusalCode = "unsafe-name" | "sealed-elsewhere" | "too-large" | "link" | "not-a-file" | "not-a-folder" | "not-tls" | "login-without-grant";

/** A declaration the host cannot apply; nothing on disk was changed by it (R69). */
export class DeclarationRefused extends Error {
  override readonly name = "DeclarationRefused";
  readonly code: RefusalCode;
  constructor(code: RefusalCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}
