import type { BodyOf, NodeView } from "../contracts/verbs.ts";
import { credentialOf, lastSent, modulesOnNode, nodeNames, nodeOf, overlayNameOf, type State } from "../projections/index.ts";
import { query } from "./envelope.ts";

/** Each node (sorted): overlay place, modules, its credential's address (never a secret) and what it was last sent. */
export function answer(state: State): BodyOf<"nodes"> {
  return {
    nodes: nodeNames(state.nodes).map((name) => {
      const sent = lastSent(state.sent, name);
      return {
        name,
        enrolledAt: nodeOf(state.nodes, name)!.enrolledAt,
        overlayName: overlayNameOf(state.overlay, name) ?? null,
        hub: state.overlay.hub === name,
        modules: modulesOnNode(state.assignments, name),
        credentialAddress: credentialOf(state.credentials, { kind: "node", name })?.address ?? null,
        lastSent: sent ? { digest: sent.digest, at: sent.at } : null,
      };
    }),
  };
}

export const nodes = query("nodes", {
  answer,
  page: { field: "nodes", key: (item) => (item as NodeView).name },
});
