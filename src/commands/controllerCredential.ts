import { CONTROLLER_PRINCIPAL, credentialOf, holdersOf, type State } from "../projections/index.ts";
import { BROKER_SEAT, CONTROLLER_NAME } from "../names.ts";
import { metaOf, refuse, type Decision, type Envelope } from "./envelope.ts";
import { NO_MESH_MESSAGE } from "./shared.ts";

/**
 * The controller's own credential (R14), decided as any command is: recorded once at start, and
 * moved off the bootstrap password once a node holds mesh-broker. The shell does the crypto (bcrypt,
 * sealing) before deciding and passes in its results; these decides read only the state.
 */

/** The commit's entity for every decision about the controller's credential. */
const CONTROLLER_ENTITY = { kind: "controller", id: CONTROLLER_NAME } as const;

/** The credential the controller dials with: its bus user and address, and its password's hash and mesh-key seal. */
export type ControllerCredentialInput = { user: string; address: string; hash: string; sealed: string };

/**
 * R14 (start): records a CredentialMinted for the controller with the hash of the password it is
 * actually using, only if the records hold no controller credential: a restart never puts the
 * bootstrap password back over a rotated one. Refusals, in order: `no-mesh` before genesis;
 * `already-recorded` when a controller credential is recorded (whatever its hash). Pure.
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
      user: input.user, hash: input.hash, sealed: input.sealed, address: input.address,
    }],
  };
}

/**
 * What rotating the controller off the bootstrap password takes: the recorded hash the shell found
 * to be the bootstrap password's (bcrypt is the shell's), and the fresh password's hash and seal.
 */
export type BootstrapRotationInput = { bootstrapHash: string; fresh: { hash: string; sealed: string } };

/**
 * R14 (push): once a node holds mesh-broker, the controller's recorded credential must not be the
 * bootstrap one: a CredentialRotated for the controller (same user and address, the fresh hash and
 * seal) decided before composing, so the user list sent carries it. Refusals, in order:
 * `no-broker-holder` when no node holds mesh-broker (no list is installed, the bootstrap password
 * stays good); `no-credential` when no controller credential is recorded; `already-rotated` when
 * the recorded hash is no longer the one the shell found to be the bootstrap password's (rotated
 * meanwhile). Pure.
 */
export function decideBootstrapRotation(state: State, input: BootstrapRotationInput, envelope: Envelope): Decision {
  if (holdersOf(state, BROKER_SEAT).length === 0) {
    return refuse("no-broker-holder", `no node holds ${BROKER_SEAT}: no user list is installed, so the bootstrap password stays in use`);
  }
  const record = credentialOf(state.credentials, CONTROLLER_PRINCIPAL);
  if (!record) return refuse("no-credential", "the records hold no controller credential to rotate");
  if (record.hash !== input.bootstrapHash) {
    return refuse("already-rotated", "the controller's credential was rotated meanwhile", "bootstrapHash");
  }
  return {
    ok: true,
    entity: { ...CONTROLLER_ENTITY },
    events: [{
      ...metaOf(envelope), type: "CredentialRotated", principal: { ...CONTROLLER_PRINCIPAL },
      user: record.user, hash: input.fresh.hash, sealed: input.fresh.sealed, address: record.address,
    }],
  };
}
