/**
 * The installer's one error, in a file of its own: what catches it (`mesh up`'s exit code) need not
 * load the certificate code of tls.ts (@peculiar/x509) to recognise it (issue 29).
 */

/** One line error of the installer: what is wrong and what to do (bad configuration, R35). */
export class InstallerError extends Error {
  override readonly name = "InstallerError";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}
