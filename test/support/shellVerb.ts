/**
 * A shell verb's handler (push, reports, replay) asked as the command server asks it: the body
 * parsed by the verb's contract first (a refusal `invalid-request` naming the field, as the
 * server answers), then the handler with the parsed request and the asker.
 */
import { VERBS, type ParsedRequestOf, type RequestOf, type ShellVerb } from "../../src/contracts/verbs.ts";
import { parseRequest } from "../../src/commands/validation.ts";
import type { Reply } from "../../src/commands/envelope.ts";
import type { Asked, ShellHandler } from "../../src/serve/server.ts";

export async function askShell<V extends ShellVerb>(verb: V, handler: ShellHandler<V>, body: RequestOf<V>, actor: string, asked: Omit<Asked, "actor"> = {}): Promise<Reply> {
  const parsed = parseRequest(VERBS[verb].request, body);
  if (!parsed.ok) return { ok: false, error: parsed.refusal };
  return handler(parsed.value as ParsedRequestOf<V>, { actor, ...asked });
}
