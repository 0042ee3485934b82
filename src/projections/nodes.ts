import type { MeshEvent } from "../events/index.ts";
import { assertNever } from "./assertNever.ts";
import { deleteIn, emptyBuckets, getIn, keysIn, setIn, sizeIn, valuesIn, type Buckets, type Owned } from "./buckets.ts";

export type NodeRecord = { name: string; publicKey: string; enrolledAt: string };
/** Enrolled nodes by name, a bucketed map (buckets.ts): read it with nodeOf, isEnrolled, nodeNames, everyNode, nodeCount. */
export type NodesState = Buckets<NodeRecord>;

export const initialNodes: NodesState = emptyBuckets();

/** Fold of enrolments and removals: the nodes after `event` (`owned`: see buckets.ts setIn). */
export function evolveNodes(nodes: NodesState, event: MeshEvent, owned: Owned): NodesState {
  switch (event.type) {
    case "NodeEnrolled":
      return setIn(nodes, event.node, { name: event.node, publicKey: event.publicKey, enrolledAt: event.at }, owned);
    case "NodeRemoved":
      return deleteIn(nodes, event.node, owned);
    case "MeshCreated": case "CredentialMinted": case "CredentialRotated": case "CredentialRevoked":
    case "ModuleRegistered": case "ModuleIssued": case "ModuleRetired": case "ModuleAssigned": case "ModuleUnassigned":
    case "SeatAliased": case "SeatHandedOver": case "OverlayPlaced": case "ProvisionMinted": case "ProvisionRotated":
    case "DeclarationSent":
    case "CommitVoided": case "RecordsRestored":
      return nodes;
    default:
      return assertNever(event);
  }
}

/** The enrolled node of that name, or undefined. */
export function nodeOf(nodes: NodesState, name: string): NodeRecord | undefined {
  return getIn(nodes, name);
}

/** Whether a node of that name is enrolled. */
export function isEnrolled(nodes: NodesState, name: string): boolean {
  return getIn(nodes, name) !== undefined;
}

/** Every enrolled node's name, sorted. */
export function nodeNames(nodes: NodesState): string[] {
  return keysIn(nodes).sort();
}

/** Every enrolled node's record, in no particular order (sort where the order shows). */
export function everyNode(nodes: NodesState): NodeRecord[] {
  return valuesIn(nodes);
}

/** How many nodes are enrolled (a walk of the map: O(nodes)). */
export function nodeCount(nodes: NodesState): number {
  return sizeIn(nodes);
}
