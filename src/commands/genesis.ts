import type { Decision, FreshSecret } from "./envelope.ts";
import type { State } from "../projections/index.ts";
import { busUser } from "../names.ts";

/** The command id of the genesis commit: one per mesh, so a retried genesis appends nothing. */
export const GENESIS_COMMAND_ID = "genesis";

/** What the genesis commit records. */
export type GenesisFacts = {
  /** `tls://host:port`, port filled in (R8). */
  genesisAddress: string;
  /** SHA-256 fingerprint of the bus certificate, `AA:BB:...` (R34). */
  fingerprint: string;
  /** The controller's bus user the installer carried at the genesis seed (R13). */
  bootstrapUser: string;
  /** The first operator's name; its bus user is `operator-<name>`. */
  operator: string;
  /** The first operator's fresh key pair: its public key and sealed seed go in the records, never the seed in the clear. */
  operatorSecret: FreshSecret;
  /** Every server's client address on a cluster, the genesis address first (R62); absent on one server. */
  addresses?: readonly string[];
  /** Host names given beside the address (`--name`): the bus's certificate names them (R71). */
  names?: readonly string[];
  /** ISO 8601 time of genesis. */
  now: string;
};

/**
 * The genesis commit, decided like every other (the installer appends it; issue 12: no event is
 * built outside a decide), pure (no clock, no randomness): MeshCreated and the first operator's
 * CredentialMinted (public key and seed sealed with the mesh key, never the seed in the clear), about entity
 * `mesh/genesis`. Refuses `mesh-exists` when the records already have a genesis.
 */
export function decideGenesis(state: State, facts: GenesisFacts): Decision {
  if (state.mesh) {
    return { ok: false, refusal: { code: "mesh-exists", message: `the records already hold a mesh created at ${state.mesh.createdAt}` } };
  }
  const meta = { actor: "installer", commandId: GENESIS_COMMAND_ID, at: facts.now };
  return {
    ok: true,
    entity: { kind: "mesh", id: "genesis" },
    events: [
      { ...meta, type: "MeshCreated", genesisAddress: facts.genesisAddress, fingerprint: facts.fingerprint, bootstrapUser: facts.bootstrapUser,
        ...(facts.addresses ? { addresses: [...facts.addresses] } : {}),
        ...(facts.names && facts.names.length > 0 ? { names: [...facts.names] } : {}) },
      {
        ...meta,
        type: "CredentialMinted",
        principal: { kind: "operator", name: facts.operator },
        user: busUser("operator", facts.operator),
        nkey: facts.operatorSecret.nkey,
        sealed: facts.operatorSecret.sealed,
        address: facts.genesisAddress,
      },
    ],
  };
}
