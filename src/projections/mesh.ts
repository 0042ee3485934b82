import type { MeshEvent } from "../events/index.ts";
import { assertNever } from "./assertNever.ts";

/** Genesis facts of the mesh; null before `MeshCreated`. */
export type MeshState = {
  genesisAddress: string;
  fingerprint: string;
  bootstrapUser: string;
  createdAt: string;
  /** Every server's client address on a cluster (MeshCreated.addresses, R62); absent on one server. */
  addresses?: string[];
  /** The host names genesis was given beside the address (MeshCreated.names, R71); absent when none. */
  names?: string[];
  /**
   * The last sequence the world had seen when a restore was accepted (RecordsRestored's lost
   * range, R44): host reports up to it predate the restore and are no evidence (R43).
   */
  restoredUpTo?: number;
} | null;

export const initialMesh: MeshState = null;

/** Fold of the genesis record: the slice after `event` (a new object when it changed, never changed in place). */
export function evolveMesh(mesh: MeshState, event: MeshEvent): MeshState {
  switch (event.type) {
    case "MeshCreated":
      return {
        genesisAddress: event.genesisAddress,
        fingerprint: event.fingerprint,
        bootstrapUser: event.bootstrapUser,
        createdAt: event.at,
        ...(event.addresses ? { addresses: [...event.addresses] } : {}),
        ...(event.names && event.names.length > 0 ? { names: [...event.names] } : {}),
      };
    case "NodeEnrolled": case "NodeRemoved": case "CredentialMinted": case "CredentialRotated":
    case "CredentialRevoked": case "ModuleRegistered": case "ModuleIssued": case "ModuleRetired": case "ModuleAssigned":
    case "ModuleUnassigned": case "SeatAliased": case "SeatHandedOver": case "OverlayPlaced":
    case "ProvisionMinted": case "ProvisionRotated": case "DeclarationSent":
    case "CommitVoided":
      return mesh;
    case "RecordsRestored":
      if (mesh === null || event.lost === null) return mesh;
      return { ...mesh, restoredUpTo: Math.max(event.lost.to, mesh.restoredUpTo ?? 0) };
    default:
      return assertNever(event);
  }
}
