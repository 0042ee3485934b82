import { CONTROLLER_PRINCIPAL, credentialOf, holdersOf, type State } from "../projections/index.ts";
import { BROKER_SEAT, CONTROLLER_NAME } from "../names.ts";
import { metaOf, refuse, type Decision, type Envelope } from "./envelope.ts";
import { NO_MESH_MESSAGE } from "./shared.ts";

/**
 * The controller's own credential (R14), decided as any command is: recorded once at start, and
 * moved off the genesis key (or an old mesh's bootstrap password) once a node holds mesh-broker. The
 * shell does the crypto (key pairs, public keys, bcrypt of an old password, sealing) before deciding
 * and passes in its results; these decides read only the state.
 */

/** The commit's entity for every decision about the controller's credential. */
const CONTROLLER_ENTITY = { kind: "controller", id: CONTROLLER_NAME } as const;

/**
 * The credential the controller dials with: its bus user and address, its seed's public key `nkey`
 * (R63; or, a controller still on a password from before nkeys, that password's bcrypt `hash`) and
 * the secret's mesh-key seal.
 */
export type ControllerCredentialInput = { user: string; address: string; nkey?: string; hash?: string; sealed: string };

/**
 * R14 (start): records a CredentialMinted for the controller with the public key of the seed it is
 * actually using, only if the records hold no controller credential: a restart never puts the
 * genesis key back over a rotated one. Refusals, in order: `no-mesh` before genesis;
 * `already-recorded` when a controller credential is recorded (whatever its key). Pure.
 */
export function decideRecordControllerCredential(state: State, input: ControllerCredentialInput, envelope: Envelope): Decision {
  if (!state.mesh) return refuse("no-mesh", NO_MESH_MESSAGE);
  if (credentialOf(state.credentials, CONTROLLER_PRINCIPAL)) {
    return refuse("already-recorded", "the controller's credential is already recorded");
  }
  return {
    ok: true,
    entity: { ...CONTROLLER_ENTITY },
    events: [{
      ...metaOf(envelope), type: "CredentialMinted", principal: { ...CONTROLLER_PRINCIPAL },
      user: input.user, ...(input.nkey !== undefined ? { nkey: input.nkey } : {}), ...(input.hash !== undefined ? { hash: input.hash } : {}),
      sealed: input.sealed, address: input.address,
    }],
  };
}

/**
 * What rotating the controller off the bootstrap takes: the recorded key the shell found to be the
 * bootstrap's (`bootstrapKey`: the genesis seed's public key, or an old mesh's bootstrap password
 * hash, bcrypt being the shell's), and the fresh key pair's public key and mesh-key-sealed seed.
 */
export type BootstrapRotationInput = { bootstrapKey: string; fresh: { nkey: string; sealed: string } };

/**
 * R14 (push): once a node holds mesh-broker, the controller's recorded credential must not be the
 * bootstrap one: a CredentialRotated for the controller (same user and address, the fresh key and
 * seal) decided before composing, so the user list sent carries it. Refusals, in order:
 * `no-broker-holder` when no node holds mesh-broker (no list is installed, the genesis key
 * stays good); `no-credential` when no controller credential is recorded; `already-rotated` when
 * the recorded key is no longer the one the shell found to be the bootstrap's (rotated
 * meanwhile). Pure.
 */
export function decideBootstrapRotation(state: State, input: BootstrapRotationInput, envelope: Envelope): Decision {
  if (holdersOf(state, BROKER_SEAT).length === 0) {
    return refuse("no-broker-holder", `no node holds ${BROKER_SEAT}: no user list is installed, so the controller's genesis key stays in use`);
  }
  const record = credentialOf(state.credentials, CONTROLLER_PRINCIPAL);
  if (!record) return refuse("no-credential", "the records hold no controller credential to rotate");
  if ((record.nkey ?? record.hash) !== input.bootstrapKey) {
    return refuse("already-rotated", "the controller's credential was rotated meanwhile", "bootstrapKey");
  }
  return {
    ok: true,
    entity: { ...CONTROLLER_ENTITY },
    events: [{
      ...metaOf(envelope), type: "CredentialRotated", principal: { ...CONTROLLER_PRINCIPAL },
      user: record.user, nkey: input.fresh.nkey, sealed: input.fresh.sealed, address: record.address,
    }],
  };
}
