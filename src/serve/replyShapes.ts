/**
 * The shapes of the server's replies, pure (src/contracts/verbs.ts): a refusal, a command's and a
 * query's reply, and the secrets a reply never carries (R3). Apart from the server's shell.
 */
import type { Reply } from "../commands/envelope.ts";
import type { CommandDefinition } from "../commands/envelope.ts";
import { fitReply } from "../commands/fit.ts";

/** Keys whose values never leave the controller in a reply: hashes and mesh-key-sealed secrets. */
const SECRET_KEYS = new Set(["hash", "sealed", "password", "seed"]);

/** A deep copy of `value` without any field named hash, sealed, password or seed (R3). */
export function withoutSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutSecrets);
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value)) if (!SECRET_KEYS.has(key)) out[key] = withoutSecrets(inner);
    return out;
  }
  return value;
}

/** A refusal reply: `code`, `message` and the `field` it names, if any. */
export function failure(code: string, message: string, field?: string): Reply {
  return { ok: false, error: field === undefined ? { code, message } : { code, message, field } };
}

/** A verb's answer as reply fields: an object as it is, anything else as `result`. */
export function spread(answer: unknown): Record<string, unknown> {
  return answer !== null && typeof answer === "object" && !Array.isArray(answer)
    ? (answer as Record<string, unknown>)
    : { result: answer };
}

/**
 * The reply to an accepted command (src/contracts/verbs.ts: the command envelope, then the verb's
 * body): the command id, whether it was a duplicate (R53) or changed nothing, the commit's
 * sequence, and `answer` (the verb's reply), whose growing lists are cut to fit `maxPayload` (R59).
 * Pure.
 */
export function commandReply(
  def: CommandDefinition,
  commandId: string,
  committed: { duplicate: boolean; unchanged?: boolean; sequence: number },
  answer: Record<string, unknown>,
  maxPayload: number,
): Reply {
  return {
    ok: true,
    commandId,
    duplicate: committed.duplicate,
    ...(committed.unchanged ? { unchanged: true } : {}),
    sequence: committed.sequence,
    // R59: a list in the reply that grows with the mesh is cut to fit the max payload.
    ...(def.bounded === undefined ? answer : fitReply(answer, def.bounded, maxPayload)),
  };
}

/** The reply to a query (src/contracts/verbs.ts: `asOf`, the sequence it was answered at, then the answer). Pure. */
export function queryReply(asOf: number, answer: Record<string, unknown>): Reply {
  return { ok: true, asOf, ...answer };
}
