import type { MeshEvent } from "../events/index.ts";
import type { State } from "../projections/index.ts";
import { metaOf, refuse, type Decision, type Envelope } from "./envelope.ts";

/**
 * What a push records after sending (R31): the push (the commit's entity), the declarations sent
 * (node and digest) and the records sequence they were composed from.
 */
export type DeclarationsSentInput = {
  pushId: string;
  sent: ReadonlyArray<{ node: string; digest: string }>;
  recordsSequence: number;
};

/**
 * R31: the records say what each node was last sent, so the next push knows which nodes are behind
 * (composed digest differs from the recorded one): one DeclarationSent per sent declaration, in
 * order, about `push/<pushId>`. A node removed since it was sent is recorded as sent all the same
 * (the send happened; the fold drops it with the node). Refusal: `nothing-sent` for an empty list.
 * Pure; `state` is taken for the decide's shape and read by nothing.
 */
export function decideDeclarationsSent(_state: State, input: DeclarationsSentInput, envelope: Envelope): Decision {
  if (input.sent.length === 0) return refuse("nothing-sent", "no declaration was sent: there is nothing to record", "sent");
  const meta = metaOf(envelope);
  const events: MeshEvent[] = input.sent.map((s) => ({
    ...meta, type: "DeclarationSent", node: s.node, digest: s.digest, recordsSequence: input.recordsSequence,
  }));
  return { ok: true, entity: { kind: "push", id: input.pushId }, events };
}
