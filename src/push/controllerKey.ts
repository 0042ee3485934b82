import type { Envelope } from "../commands/envelope.ts";
import { decideBootstrapRotation } from "../commands/controllerCredential.ts";
import { CONTROLLER_PRINCIPAL, credentialOf, holdersOf } from "../projections/index.ts";
import { newFreshSecret, openWithMeshKey, passwordMatches, secretMatches, sealWithMeshKey } from "../crypto/secrets.ts";
import { BROKER_SEAT, CONTROLLER_NAME } from "../names.ts";
import type { ControllerCredential } from "../controller/credential.ts";
import { BOOTSTRAP_NKEY, BOOTSTRAP_PASSWORD } from "../genesis.ts";
import type { PushContext } from "./context.ts";

/** The controller's own key in a push: off the genesis key (R14), and staged when the records hold a new one (R50). */

/**
 * R14: once a node holds mesh-broker, the controller's recorded credential must not be the
 * bootstrap one. Decides a CredentialRotated for the controller (same user) before composing, so
 * the user list sent carries it; adoptControllerCredential then stages it like any other rotation.
 * Returns true when it rotated.
 */
async function rotateBootstrap(ctx: PushContext, pushId: string, actor: string, now: string): Promise<boolean> {
  const state = ctx.catalogue.state;
  if (holdersOf(state, BROKER_SEAT).length === 0) return false;
  const principal = CONTROLLER_PRINCIPAL;
  const recorded = credentialOf(state.credentials, principal);
  if (!recorded || !isBootstrapCredential(recorded)) return false;
  const fresh = newFreshSecret((seed) => sealWithMeshKey(ctx.meshKey, seed));
  const commandId = `${pushId}-controller-rotation`;
  const envelope: Envelope = { commandId, actor, now, secrets: [] };
  const bootstrapKey = recorded.nkey ?? recorded.hash ?? "";
  const result = await ctx.catalogue.transact(commandId, (current) => decideBootstrapRotation(current, { bootstrapKey, fresh: { nkey: fresh.nkey, sealed: fresh.sealed } }, envelope));
  if (!result.ok) return false;
  ctx.log.info(`push ${pushId}: the controller's genesis key is replaced in the records by a key of its own; the broker's next user list carries it (R14)`);
  return true;
}

/**
 * True when the recorded controller credential is the well-known genesis key (R13): BOOTSTRAP_NKEY,
 * or the bootstrap password's hash of a mesh installed before nkeys (rotated onto a seed alike).
 */
function isBootstrapCredential(recorded: { nkey?: string | undefined; hash?: string | undefined }): boolean {
  if (recorded.nkey !== undefined) return recorded.nkey === BOOTSTRAP_NKEY;
  return recorded.hash !== undefined && passwordMatches(BOOTSTRAP_PASSWORD, recorded.hash);
}

/** Per controller credential: the recorded key (or hash) and the secret last found to match it (saves a check per push). */
const matched = new WeakMap<ControllerCredential, { key: string; password: string }>();

/**
 * R14 R50: the one way the controller switches to a new key of its own, whoever decided it
 * (the first push off the genesis key, `mesh credential rotate controller`, a node removal
 * that ended a copy of it, R48, a restore's fresh credentials). Run by every push before it
 * composes, while the bus still runs the list that admits the current key: when the records'
 * controller credential is not the key the controller dials with, its sealed secret is opened
 * with the mesh key and staged (ControllerCredential.stage: kept beside the credential file, tried
 * at reconnects in turn with the old one). The list this push sends to the broker carries the new
 * public key; when the broker reports it applied, the push commits the seed into the file
 * (confirmRotation). Only while a node holds mesh-broker: without one no list is installed, and
 * the old key stays good. Returns true when a rotation is pending after it (staged now or
 * before and not yet confirmed).
 */
export async function adoptControllerCredential(ctx: PushContext, pushId: string, actor: string, now: string): Promise<boolean> {
  const controller = ctx.controller;
  if (!controller) return false;
  if (holdersOf(ctx.catalogue.state, BROKER_SEAT).length === 0) return controller.pending();
  await rotateBootstrap(ctx, pushId, actor, now);
  const recorded = credentialOf(ctx.catalogue.state.credentials, CONTROLLER_PRINCIPAL);
  if (!recorded) return controller.pending();
  const known = matched.get(controller);
  const current = controller.password();
  const key = recorded.nkey ?? recorded.hash ?? "";
  if ((known?.key === key && known.password === current) || secretMatches(current, recorded)) {
    matched.set(controller, { key, password: current });
    return controller.pending();
  }
  if (recorded.sealed === undefined) {
    ctx.log.error(`push ${pushId}: the records' controller credential holds no sealed seed: \`mesh credential rotate controller ${CONTROLLER_NAME}\``);
    return controller.pending();
  }
  const password = openWithMeshKey(ctx.meshKey, recorded.sealed);
  controller.stage(password);
  matched.set(controller, { key, password });
  ctx.log.info(`push ${pushId}: the records hold a new controller credential: staged before the list that refuses the old key is sent (R50)`);
  return true;
}
