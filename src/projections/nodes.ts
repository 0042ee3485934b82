import type { SliceFold } from "./slice.ts";

export type NodeRecord = { name: string; publicKey: string; enrolledAt: string };
/** Enrolled nodes by name: read it with nodeOf, isEnrolled, nodeNames, everyNode, nodeCount. */
export type NodesState = ReadonlyMap<string, NodeRecord>;

/** Fold of enrolments and removals. */
export const nodesFold: SliceFold<NodesState> = {
  NodeEnrolled: (nodes, event) => {
    nodes.set(event.node, { name: event.node, publicKey: event.publicKey, enrolledAt: event.at });
  },
  NodeRemoved: (nodes, event) => {
    nodes.delete(event.node);
  },
};

/** The enrolled node of that name, or undefined. */
export function nodeOf(nodes: NodesState, name: string): NodeRecord | undefined {
  return nodes.get(name);
}

/** Whether a node of that name is enrolled. */
export function isEnrolled(nodes: NodesState, name: string): boolean {
  return nodes.has(name);
}

/** Every enrolled node's name, sorted. */
export function nodeNames(nodes: NodesState): string[] {
  return [...nodes.keys()].sort();
}

/** Every enrolled node's record, in no particular order (sort where the order shows). */
export function everyNode(nodes: NodesState): NodeRecord[] {
  return [...nodes.values()];
}

/** How many nodes are enrolled. */
export function nodeCount(nodes: NodesState): number {
  return nodes.size;
}
