import type { Draft } from "immer";
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
  /**
   * The last sequence the world had seen when a restore was accepted (RecordsRestored's lost
   * range, R44): host reports up to it predate the restore and are no evidence (R43).
   */
  restoredUpTo?: number;
} | null;

export const initialMesh: MeshState = null;

/** Fold of the genesis record. Returns the replacement when the slice is replaced, else undefined. */
export function evolveMesh(draft: Draft<MeshState>, event: MeshEvent): MeshState | undefined {
  switch (event.type) {
    case "MeshCreated":
      return {
        genesisAddress: event.genesisAddress,
        fingerprint: event.fingerprint,
        bootstrapUser: event.bootstrapUser,
        createdAt: event.at,
        ...(event.addresses ? { addresses: [...event.addresses] } : {}),
      };
    case "NodeEnrolled": case "NodeRemoved": case "CredentialMinted": case "CredentialRotated":
    case "CredentialRevoked": case "ModuleRegistered": case "ModuleIssued": case "ModuleAssigned":
    case "ModuleUnassigned": case "SeatAliased": case "SeatHandedOver": case "OverlayPlaced":
    case "ProvisionMinted": case "ProvisionRotated": case "DeclarationSent":
    case "CommitVoided":
      return undefined;
    case "RecordsRestored":
      if (draft === null || event.lost === null) return undefined;
      return { ...(draft as NonNullable<MeshState>), restoredUpTo: Math.max(event.lost.to, draft.restoredUpTo ?? 0) };
    default:
      return assertNever(event);
  }
}
