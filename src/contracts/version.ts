import { z } from "zod";

/**
 * The version field every message crossing a process boundary carries (issue 12): `v`, a whole
 * number per seam. The writer always stamps it; the reader checks it before anything else and
 * refuses another version with an error naming the field, the version it speaks and the fix. A
 * message without `v` is read as version 1: every message written before the contracts existed
 * (a host's saved declaration, the REPORTS stream's stored reports, an older CLI's request) is
 * version 1 of its seam. Pure.
 */

/** The seams whose messages carry a version, each with the one version this build speaks. */
export const CONTRACT_VERSIONS = {
  /** Requests and replies of the controller's verbs (on `commandSubject(asker, verb)`, R51). */
  verbs: 1,
  /** A node's declaration on `declarationSubject(node)`. */
  declaration: 1,
  /** A node's report on `reportSubject(node)` (R32). */
  report: 1,
} as const;

/** A seam with a versioned message. */
export type Seam = keyof typeof CONTRACT_VERSIONS;

/**
 * The `v` field of a seam's messages: the literal version this build speaks, optional on read
 * (absent is version 1, see above). A peer's other version fails with a message naming `v`.
 */
export function versionField<S extends Seam>(seam: S): z.ZodOptional<z.ZodLiteral<(typeof CONTRACT_VERSIONS)[S]>> {
  const version = CONTRACT_VERSIONS[seam];
  return z.literal(version, { error: (issue) => versionMessage(seam, issue.input) }).optional();
}

/** The words of a version refusal: the field, what the peer sent, what this side speaks, the fix. */
export function versionMessage(seam: Seam, sent: unknown): string {
  return `"v": the peer speaks version ${JSON.stringify(sent)} of the ${seam} contract, this side speaks version ${CONTRACT_VERSIONS[seam]}: upgrade the older of the two (mesh --version names a release)`;
}

/**
 * Whether `message` (a JSON object as received) speaks this build's version of `seam`: null when it
 * does (or says no version), else the refusal `unsupported-version` on field `v`. Checked before
 * the rest of the message, so a peer of another version hears about its version, not about a field
 * that version renamed.
 */
export function versionRefusal(seam: Seam, message: unknown): { code: "unsupported-version"; message: string; field: "v" } | null {
  if (message === null || typeof message !== "object" || !Object.hasOwn(message, "v")) return null;
  const sent = (message as { v?: unknown }).v;
  if (sent === undefined || sent === CONTRACT_VERSIONS[seam]) return null;
  return { code: "unsupported-version", message: versionMessage(seam, sent), field: "v" };
}

/**
 * A message that does not parse with its contract, as the reader throws it: `code`
 * `unsupported-version` (another version, `field` "v") or `bad-message` (a field the contract does
 * not allow, `field` its dotted path), and the seam.
 */
export class ContractError extends Error {
  override readonly name = "ContractError";
  readonly code: "unsupported-version" | "bad-message";
  readonly seam: Seam;
  readonly field: string | undefined;
  constructor(seam: Seam, code: ContractError["code"], message: string, field?: string) {
    super(message);
    this.seam = seam;
    this.code = code;
    this.field = field;
  }
}

/**
 * Parses `message` with `schema`, the contract of one of `seam`'s messages: the version first
 * (versionRefusal), then the shape. Returns the parsed value; throws ContractError naming the
 * field (`what` says which message, e.g. "the reply to node.enrol").
 */
export function parseContract<Schema extends z.ZodType>(seam: Seam, schema: Schema, message: unknown, what: string): z.infer<Schema> {
  const version = versionRefusal(seam, message);
  if (version) throw new ContractError(seam, "unsupported-version", `${what}: ${version.message}`, "v");
  const parsed = schema.safeParse(message);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field = (issue?.path ?? []).map(String).join(".");
  const where = field === "" ? "" : ` at "${field}"`;
  throw new ContractError(seam, "bad-message", `${what} does not follow its contract${where}: ${issue?.message ?? "invalid"}`, field === "" ? undefined : field);
}
