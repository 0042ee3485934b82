import type { Draft } from "immer";
import type { MeshEvent } from "../events/index.ts";
import { assertNever } from "./assertNever.ts";

export type NodeRecord = { name: string; publicKey: string; enrolledAt: string };
/** Enrolled nodes by name. */
export type NodesState = Record<string, NodeRecord>;

export const initialNodes: NodesState = {};

/** Fold of enrolments and removals. */
export function evolveNodes(draft: Draft<NodesState>, event: MeshEvent): void {
  switch (event.type) {
    case "NodeEnrolled":
      draft[event.node] = { name: event.node, publicKey: event.publicKey, enrolledAt: event.at };
      return;
    case "NodeRemoved":
      delete draft[event.node];
      return;
    case "MeshCreated": case "CredentialMinted": case "CredentialRotated": case "CredentialRevoked":
    case "ModuleRegistered": case "ModuleIssued": case "ModuleAssigned": case "ModuleUnassigned":
    case "SeatAliased": case "SeatHandedOver": case "OverlayPlaced": case "ProvisionMinted": case "ProvisionRotated":
    case "DeclarationSent":
    case "CommitVoided": case "RecordsRestored":
      return;
    default:
      assertNever(event);
  }
}

/** The enrolled node of that name, or undefined. */
export function nodeOf(nodes: NodesState, name: string): NodeRecord | undefined {
  return nodes[name];
}

/** Every enrolled node's name, sorted. */
export function nodeNames(nodes: NodesState): string[] {
  return Object.keys(nodes).sort();
}
