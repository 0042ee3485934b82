/**
 * A step of `mesh up` failed: one line saying which and why. Its own module, so the CLI tells an
 * UpError without loading `up` itself (src/cli/up.ts loads that only for the verbs that run it).
 */
export class UpError extends Error {
  override readonly name = "UpError";
  /** The controller's refusal code when the controller answered and refused; undefined otherwise. */
  readonly code: string | undefined;
  constructor(message: string, code?: string) {
    super(message);
    this.code = code;
  }
}
