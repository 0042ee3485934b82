import type { Entity, MeshEvent, Principal } from "../events/index.ts";
import { credentialEntries, isEnrolled, moduleOf, overlayNameOf, retiredKeyOf, retiredKeyText, type State } from "../projections/index.ts";
import {
  brokerNode, brokerReachableAt, evolve, formatBusAddress, holdersOf, nodesOfModule, parseBusAddress,
} from "../projections/index.ts";
import { BROKER_SEAT, CONTROLLER_SEAT } from "../names.ts";
import { BOOTSTRAP_NKEY } from "../genesis.ts";
import { refuse, type Decision, type Envelope, type FreshSecret } from "./envelope.ts";

/**
 * Helpers every command file shares. Pure: no clock, no randomness, no I/O.
 */

/**
 * Why the nkey public key `nkey` cannot be a new key of anyone's, in words, or undefined when it
 * is free (one key, one principal on the list, R63): the genesis bootstrap key (BOOTSTRAP_NKEY),
 * whoever holds it now, because its seed is public in the source (R13) and anyone could dial as a
 * principal listed with it; or the principal whose recorded credential holds it (`<kind>:<name>`).
 */
export function nkeyInUse(state: State, nkey: string): string | undefined {
  if (nkey === BOOTSTRAP_NKEY) return "this nkey is the genesis bootstrap key, whose seed is public in the source (R13): anyone could dial with it";
  for (const [key, record] of credentialEntries(state.credentials)) if (record.nkey === nkey) return `${key} holds this nkey`;
  return undefined;
}

/**
 * R66: the refusal `key-retired` (field `field`) when the records ever retired public key `key` (an
 * nkey or a node's X25519 key: its node removed, rotated away, revoked), naming whose it was, when
 * and why it went, then `fix` (the way to a new key); else null. A retired key may sit on a disk
 * the mesh no longer trusts (a removed machine, a backup), so it is never admitted again.
 */
export function refuseRetiredKey(state: State, key: string, field: string, fix: string): Decision | null {
  const record = retiredKeyOf(state.retired, key);
  if (record === undefined) return null;
  const what = record.kind === "nkey" ? "this nkey" : "this public key";
  return refuse("key-retired", `${what} was ${retiredKeyText(record)}: a key the records retired is never admitted again (R66); ${fix}`, field);
}

/**
 * The i-th fresh secret of the envelope. Throws when the handler filled in fewer than the verb's
 * `secretsNeeded` asked for: that is a bug in the shell, not a business refusal.
 */
export function secretAt(envelope: Envelope, index: number): FreshSecret {
  const secret = envelope.secrets[index];
  if (secret === undefined) {
    throw new Error(`command ${envelope.commandId} needs fresh secret #${index + 1} but its envelope carries ${envelope.secrets.length}`);
  }
  return secret;
}

/** The genesis address with its port filled in (R8): what a machine off the overlay dials. */
export function genesisAddress(state: State): string {
  if (!state.mesh) throw new Error("the mesh has no genesis record (MeshCreated): run the installer first");
  return formatBusAddress(parseBusAddress(state.mesh.genesisAddress));
}

/**
 * A function giving where a principal's credential should point now (R7), by kind:
 * - node: `brokerReachableAt(state, node)`;
 * - module: the address every node it is assigned to agrees on, else the genesis address (an
 *   unassigned module has no node yet, and the genesis address is the one any node can dial);
 * - controller: the same rule over the nodes holding `the-controller`;
 * - builder: its node's address when a node of that name is enrolled, else the genesis address;
 * - operator: the genesis address (a person's CLI dials from outside the overlay).
 *
 * Made once per state so a reply over every credential stays linear: `brokerReachableAt` is
 * remembered by whether the node is the broker's, on the overlay or off it, the only things about
 * the node it reads (R7).
 * Throws when the mesh has no genesis record.
 */
export function addressResolver(state: State): (principal: Principal) => string {
  const genesis = genesisAddress(state);
  const byPlacement = new Map<string, string>();
  const broker = brokerNode(state);
  const forNode = (node: string): string => {
    const placement = node === broker ? "broker" : overlayNameOf(state.overlay, node) !== undefined ? "placed" : "off";
    let address = byPlacement.get(placement);
    if (address === undefined) {
      address = brokerReachableAt(state, node, broker);
      byPlacement.set(placement, address);
    }
    return address;
  };
  const forNodes = (nodes: readonly string[]): string => {
    const addresses = new Set(nodes.map(forNode));
    return addresses.size === 1 ? [...addresses][0]! : genesis;
  };
  let controllerNodes: string[] | undefined;
  return (principal) => {
    switch (principal.kind) {
      case "node":
        return forNode(principal.name);
      case "module":
        return forNodes(nodesOfModule(state.assignments, principal.name));
      case "controller":
        return forNodes((controllerNodes ??= holdersOf(state, CONTROLLER_SEAT)));
      case "builder":
        return forNodes(isEnrolled(state.nodes, principal.name) ? [principal.name] : []);
      case "operator":
        return genesis;
    }
  };
}

/** Where one principal's credential should point now: see `addressResolver` (R7). Throws before genesis. */
export function addressFor(state: State, principal: Principal): string {
  return addressResolver(state)(principal);
}

/** The refusal message of a command that needs genesis first. */
export const NO_MESH_MESSAGE = "the mesh has no genesis record yet: run the installer (genesis) first";

/**
 * The refusal of a command about `module` on `node` when either is unknown, or null: `unknown-module`
 * (field `module`) when no such module is registered, else `unknown-node` (field `node`) when no
 * such node is enrolled. Assign and unassign share it, so both say the same thing in the same words.
 */
export function refuseUnknownModuleOrNode(state: State, module: string, node: string): Decision | null {
  if (!moduleOf(state.modules, module)) {
    return refuse("unknown-module", `no module "${module}" is registered: run \`mesh module register\` first`, "module");
  }
  if (!isEnrolled(state.nodes, node)) {
    return refuse("unknown-node", `no node "${node}" is enrolled: run \`mesh node enrol\` first`, "node");
  }
  return null;
}

/**
 * The state a commit of `events` about `entity` would leave (the fold run on a copy: `state` is
 * left as it was). Pure; for decides that judge their own outcome (R49).
 */
export function stateAfter(state: State, entity: Entity, events: readonly MeshEvent[], envelope: Envelope): State {
  return evolve(state, [{ sequence: state.sequence + 1, commit: { commandId: envelope.commandId, entity, events: [...events] } }]);
}

/**
 * R49: the mesh never loses its broker. When `state` has a holder of `mesh-broker` and the state
 * after `events` has none, the refusal `last-broker-holder` naming the seat, its holders and
 * `field` (the argument that would take it away); else null. A mesh that never had a holder
 * (before the broker module is first assigned) is not refused: there is nothing to lose.
 */
export function refuseLosingBroker(
  state: State,
  entity: Entity,
  events: readonly MeshEvent[],
  envelope: Envelope,
  field: string,
): Decision | null {
  const holders = holdersOf(state, BROKER_SEAT);
  if (holders.length === 0) return null;
  if (holdersOf(stateAfter(state, entity, events, envelope), BROKER_SEAT).length > 0) return null;
  return refuse(
    "last-broker-holder",
    `this would leave seat ${BROKER_SEAT} with no holder (held now by ${holders.join(", ")}): the bus would get no user list again (R49); `
      + `assign a module claiming ${BROKER_SEAT} to another node first, or hand the seat over (\`mesh seat handover ${BROKER_SEAT} <from> <to>\`)`,
    field,
  );
}
