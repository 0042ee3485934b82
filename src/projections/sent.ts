import type { SliceFold } from "./slice.ts";

export type SentRecord = { digest: string; recordsSequence: number; at: string };
/** What each node was last sent (R31: a node is behind when its composed digest differs), by node name: read it with lastSent. */
export type SentState = ReadonlyMap<string, SentRecord>;

/** Fold of `DeclarationSent`; a removed node's record goes with it. */
export const sentFold: SliceFold<SentState> = {
  DeclarationSent: (sent, event) => {
    sent.set(event.node, { digest: event.digest, recordsSequence: event.recordsSequence, at: event.at });
  },
  NodeRemoved: (sent, event) => {
    sent.delete(event.node);
  },
};

/** What a node was last sent, or undefined when it was never sent anything. */
export function lastSent(state: SentState, node: string): SentRecord | undefined {
  return state.get(node);
}
