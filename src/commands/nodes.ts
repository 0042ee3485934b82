import { z } from "zod";
import { modulesOnNode, nodeNames, type State } from "../projections/index.ts";
import { principalKey } from "../names.ts";
import type { QueryDefinition } from "./envelope.ts";

/** `nodes {}`: every enrolled node. */
export const NodesRequest = z.object({}).strict();

export type NodeView = {
  name: string;
  enrolledAt: string;
  overlayName: string | null;
  hub: boolean;
  modules: string[];
  credentialAddress: string | null;
  lastSent: { digest: string; at: string } | null;
};

/** Each node (sorted): overlay place, modules, its credential's address (never a secret) and what it was last sent. */
export function answer(state: State): { nodes: NodeView[] } {
  return {
    nodes: nodeNames(state.nodes).map((name) => {
      const sent = state.sent[name];
      return {
        name,
        enrolledAt: state.nodes[name]!.enrolledAt,
        overlayName: state.overlay.placed[name] ?? null,
        hub: state.overlay.hub === name,
        modules: modulesOnNode(state.assignments, name),
        credentialAddress: state.credentials[principalKey("node", name)]?.address ?? null,
        lastSent: sent ? { digest: sent.digest, at: sent.at } : null,
      };
    }),
  };
}

export const nodes: QueryDefinition<typeof NodesRequest> = {
  kind: "query",
  verb: "nodes",
  summary: "every enrolled node: overlay place, modules, credential address",
  schema: NodesRequest,
  answer,
  page: { field: "nodes", key: (item) => (item as NodeView).name },
};
