/**
 * `mesh explain <kind> <name> [pub|sub <subject>]`: without a subject, lists every grant of the
 * principal with the manifest line or record behind each. With one, asks the controller's `explain` query which
 * manifest line and which record allow a principal to publish or subscribe a subject, or why
 * nothing does (deny by default). Readable output is `allowed: <because>` (one line per grant
 * that covers the subject) or `denied: <reason>`; `--json` prints the reply.
 *
 * Exit code: 0 when allowed and the principal is on the bus (it has a credential, R12); 1 when
 * denied, or allowed by composition but not yet on the bus (the server would refuse its
 * connection); 2 for a usage or connection error, as every verb.
 */
import { PRINCIPAL_KINDS } from "../names.ts";
import { EXIT_OK, EXIT_REFUSED, verbUsageError } from "./context.ts";
import { table, type View } from "./render.ts";
import type { ArgumentSpec } from "./busVerb.ts";

type Row = Record<string, unknown>;

/** The positionals of `mesh explain`, in order. */
export const EXPLAIN_ARGUMENTS: readonly ArgumentSpec[] = [
  { name: "kind", description: `the principal's kind: ${PRINCIPAL_KINDS.join(", ")}` },
  { name: "name", description: "the principal's name (mesh-controller for the controller)" },
  { name: "direction", description: "pub (publish) or sub (subscribe); leave out with the subject to list every grant", optional: true },
  { name: "subject", description: "the subject, as the client would write it (quote wildcards for the shell)", optional: true },
];

/** The request body of `explain` from the positionals. Throws UsageError for a direction other than pub or sub. */
export function explainBody(args: readonly unknown[]): Row {
  const [kind, name, direction, subject] = args.map((a) => (a === undefined ? undefined : String(a)));
  if (direction === undefined) return { kind, name };
  if (direction !== "pub" && direction !== "sub") throw verbUsageError("explain", "direction", `pub or sub, not "${direction}"`);
  if (subject === undefined) throw verbUsageError("explain", "subject", "give the subject after the direction, or neither to list every grant");
  return { kind, name, direction, subject };
}

/** Readable lines of an explain reply: `allowed: <because>` per grant, or `denied: <reason>`. */
export function renderExplain(reply: Row, view: View = {}): string[] {
  if (Array.isArray(reply.grants)) return renderGrants(reply, view);
  const because = Array.isArray(reply.because) ? (reply.because as Row[]) : [];
  const principal = (reply.principal ?? {}) as Row;
  const who = `${String(principal.kind)} ${String(principal.name)} (user ${String(reply.user)})`;
  const verb = reply.direction === "pub" ? "publish" : "subscribe";
  const lines: string[] = [];
  if (reply.allowed === true) {
    lines.push(`${who} may ${verb} ${String(reply.subject)}:`);
    for (const grant of because) lines.push(`allowed: ${String(grant.because)} (grant ${String(grant.direction)} ${String(grant.subject)})`);
    if (reply.onTheBus !== true) lines.push(`but not on the bus yet: ${String(reply.reason ?? "it has no credential (R12)")}`);
  } else {
    lines.push(`${who} may not ${verb} ${String(reply.subject)}:`);
    lines.push(`denied: ${String(reply.reason ?? "deny by default")}`);
    if (reply.onTheBus !== true) lines.push("note: it has no credential: it is not in the user list at all (R12)");
  }
  lines.push(...credentialLines(reply));
  if (typeof reply.assumed === "string") lines.push(`note: ${reply.assumed}`);
  return lines;
}

/**
 * What an explain reply says of the credential it speaks of (`credentialSince`): that the key it
 * replaced is refused once the broker's holder applies a list carrying it; or, while that key waits for a push (`keyUnsent`,
 * R50), that it is the records' key, which the next push installs on the bus, the replaced one
 * admitted until then: the bus does not know it yet; for a rotated module (`previousKeyUntil`,
 * R73), that the replaced key keeps its grants until the nodes named report the new one.
 */
function credentialLines(reply: Row): string[] {
  if (typeof reply.credentialSince !== "string") return [];
  const until = Array.isArray(reply.previousKeyUntil) ? reply.previousKeyUntil.map(String) : [];
  if (until.length > 0) {
    // R73: a module's rotation keeps its old key admitted, with these grants, until its nodes report the new one.
    return [`with its credential of ${reply.credentialSince}: the key it replaced keeps these grants until ${until.join(", ")} report${until.length === 1 ? "s" : ""} the new one applied; the push after that drops it (R73; \`mesh push\` names the old keys it still admits)`];
  }
  if (reply.keyUnsent === true) {
    return [`with its credential of ${reply.credentialSince}: the records' key, on no user list sent yet; the next push installs it on the bus, and until the broker's holder applies that list the bus admits the key it replaced (R50)`];
  }
  // A push that sent the list is not one the holder applied: `mesh push --wait` says which.
  return [`with its credential of ${reply.credentialSince}: a key it replaced is refused once the broker's holder applies a user list carrying the new one (\`mesh push --wait\` says when) (R48, R50)`];
}

/** Readable lines of a principal's grants (explain without a subject): a table of direction, subject and why. */
export function renderGrants(reply: Row, view: View = {}): string[] {
  const principal = (reply.principal ?? {}) as Row;
  const lines = [`${String(principal.kind)} ${String(principal.name)} (user ${String(reply.user)})${reply.responder === true ? ", answers requests" : ""}:`];
  lines.push(...table(reply.grants as Row[], ["direction", "subject", "because"], view.width));
  if (reply.onTheBus !== true) lines.push("note: it has no credential yet, so the bus admits none of this until it has one");
  lines.push(...credentialLines(reply));
  if (typeof reply.assumed === "string") lines.push(`note: ${reply.assumed}`);
  return lines;
}

/** 0 when allowed and on the bus, or a listing of grants; else 1 (see the module comment). */
export function explainExitCode(reply: Row): number {
  if (Array.isArray(reply.grants)) return EXIT_OK;
  return reply.allowed === true && reply.onTheBus === true ? EXIT_OK : EXIT_REFUSED;
}
