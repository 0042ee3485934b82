import type { SliceFold } from "./slice.ts";

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

/** Fold of the genesis record: a new value (the slice may be null, so handlers return it rather than change it). */
export const meshFold: SliceFold<MeshState> = {
  MeshCreated: (_mesh, event) => ({
    genesisAddress: event.genesisAddress,
    fingerprint: event.fingerprint,
    bootstrapUser: event.bootstrapUser,
    createdAt: event.at,
    ...(event.addresses ? { addresses: [...event.addresses] } : {}),
    ...(event.names && event.names.length > 0 ? { names: [...event.names] } : {}),
  }),
  RecordsRestored: (mesh, event) => {
    if (mesh === null || event.lost === null) return;
    return { ...mesh, restoredUpTo: Math.max(event.lost.to, mesh.restoredUpTo ?? 0) };
  },
};
