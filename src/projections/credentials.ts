import type { MeshEvent, Principal } from "../events/index.ts";
import { CONTROLLER_NAME, principalKey } from "../names.ts";
import { assertNever } from "./assertNever.ts";
import { deleteIn, emptyBuckets, entriesIn, getIn, setIn, valuesIn, type Buckets, type Owned } from "./buckets.ts";
import { sortedHas, withInserted } from "./sorted.ts";

/** A principal's current credential as the records hold it (never a seed or password in the clear). */
export type CredentialRecord = {
  principal: Principal;
  user: string;
  /** The nkey public key the user list carries (R63); absent on a credential from before nkeys. */
  nkey?: string;
  /** The bcrypt hash of a credential from before nkeys (listed as a password user until rotated). */
  hash?: string;
  /**
   * The seed sealed with the mesh key, for a key the controller minted (controller, operator,
   * module, builder); absent for a node, whose key is generated on the node and never leaves it (R64).
   */
  sealed?: string;
  address: string;
  mintedAt: string;
  /**
   * The records sequence of the CredentialRotated that made this credential, absent for one as
   * first minted (and in snapshots older than the field). The push compares it with the sequence
   * the broker's last user list was composed from to say which principals got fresh credentials.
   */
  rotatedAt?: number;
  /**
   * Nodes this very credential may have been delivered to and that no longer have it assigned
   * (sorted): a module unassigned or handed over since the credential was minted. Together with the
   * nodes the module is assigned to now (exposedTo) this is every node whose disk may hold it
   * (R48). A new credential starts with none.
   */
  deliveredTo?: string[];
  /**
   * R73: the key this credential replaced, kept by a rotation with `overlap` (a module's): the
   * user list admits it beside `nkey` until the module's nodes report the new one (compose/overlap.ts).
   * `rotatedAt` is the records sequence of that rotation. Only the key just replaced: a rotation
   * drops the one before it, so a key whose overlap has ended is never admitted again (R66).
   */
  previous?: PreviousKey;
};
/** R73: a credential's replaced key and the records sequence of the rotation that replaced it. */
export type PreviousKey = { nkey: string; rotatedAt: number };
/**
 * Current credentials by principal key (`<kind>:<name>`), a bucketed map (buckets.ts): read it
 * with credentialOf, credentialAt and everyCredential.
 */
export type CredentialsState = Buckets<CredentialRecord>;

export const initialCredentials: CredentialsState = emptyBuckets();

/**
 * The principal whose credential a module's declaration carries: the controller's own for the
 * controller's module (`mesh-controller` runs with the controller's credential), the module's else.
 */
export function principalOfModule(module: string): Principal {
  return module === CONTROLLER_NAME ? { kind: "controller", name: CONTROLLER_NAME } : { kind: "module", name: module };
}

/**
 * A fold's index of `deliveredTo`: node → keys of the credentials that may name it. A superset
 * (a key is checked against its record before use, never removed when a record is replaced), built
 * from the credentials at the fold's second NodeRemoved (the first scans every record: building
 * the index costs that scan too), so a long fold's removals look at those credentials instead of
 * every one. Owned by one fold over one working state; never part of the state.
 */
export type DeliveryIndex = { byNode: Map<string, Set<string>> | null; removals: number };

/** A fresh, unbuilt delivery index for one fold. */
export function newDeliveryIndex(): DeliveryIndex {
  return { byNode: null, removals: 0 };
}

function deliveriesOf(index: DeliveryIndex, credentials: CredentialsState): Map<string, Set<string>> {
  if (index.byNode === null) {
    index.byNode = new Map();
    for (const [key, record] of entriesIn(credentials)) {
      for (const node of record.deliveredTo ?? []) noteDelivery(index.byNode, node, key);
    }
  }
  return index.byNode;
}

function noteDelivery(byNode: Map<string, Set<string>>, node: string, key: string): void {
  let keys = byNode.get(node);
  if (keys === undefined) byNode.set(node, (keys = new Set()));
  keys.add(key);
}

/**
 * Fold of minting, rotation and revocation: the credentials after `event` (`owned`: see buckets.ts
 * setIn; records are replaced, never changed). A removed node's credential goes with it.
 * `sequence` is the records sequence of the commit the event is in (kept as `rotatedAt` by a
 * rotation; a rotation with `overlap` keeps the key it replaced as `previous`, R73). A module unassigned from a node leaves that node in its credential's `deliveredTo`
 * (R48). `index` (the fold's, DeliveryIndex) only makes a NodeRemoved cheaper: the result is the same.
 */
export function evolveCredentials(credentials: CredentialsState, event: MeshEvent, owned: Owned, sequence: number, index: DeliveryIndex): CredentialsState {
  switch (event.type) {
    case "CredentialMinted":
    case "CredentialRotated": {
      const key = principalKey(event.principal.kind, event.principal.name);
      const replaced = event.type === "CredentialRotated" && event.overlap === true ? getIn(credentials, key)?.nkey : undefined;
      return setIn(credentials, key, {
        principal: event.principal,
        user: event.user,
        ...(event.nkey !== undefined ? { nkey: event.nkey } : {}),
        ...(event.hash !== undefined ? { hash: event.hash } : {}),
        ...(event.sealed !== undefined ? { sealed: event.sealed } : {}),
        address: event.address,
        mintedAt: event.at,
        ...(event.type === "CredentialRotated" ? { rotatedAt: sequence } : {}),
        ...(replaced !== undefined && replaced !== event.nkey ? { previous: { nkey: replaced, rotatedAt: sequence } } : {}),
      }, owned);
    }
    case "ModuleUnassigned": {
      const principal = principalOfModule(event.module);
      const key = principalKey(principal.kind, principal.name);
      const record = getIn(credentials, key);
      const deliveredTo = record === undefined ? undefined : withInserted(record.deliveredTo, event.node, owned);
      if (record === undefined || deliveredTo === undefined) return credentials;
      if (index.byNode) noteDelivery(index.byNode, event.node, key);
      return setIn(credentials, key, { ...record, deliveredTo }, owned);
    }
    case "CredentialRevoked":
      return deleteIn(credentials, principalKey(event.principal.kind, event.principal.name), owned);
    case "NodeRemoved": {
      // Every credential delivered to the node is rotated in the removal's own commit (R48), so
      // the removed node leaves no one's delivery list.
      let after = deleteIn(credentials, principalKey("node", event.node), owned);
      // The credentials that may name the node: every one at the fold's first removal, then the index's.
      index.removals += 1;
      const candidates = index.removals === 1 && index.byNode === null
        ? entriesIn(after)
        : [...(deliveriesOf(index, after).get(event.node) ?? [])].map((key): [string, CredentialRecord | undefined] => [key, getIn(after, key)]);
      for (const [key, record] of candidates) {
        if (record?.deliveredTo === undefined || !sortedHas(record.deliveredTo, event.node)) continue;
        const { deliveredTo, ...rest } = record;
        const left = deliveredTo.filter((n) => n !== event.node);
        after = setIn(after, key, left.length === 0 ? rest : { ...rest, deliveredTo: left }, owned);
      }
      index.byNode?.delete(event.node);
      return after;
    }
    case "MeshCreated": case "NodeEnrolled": case "ModuleRegistered": case "ModuleIssued": case "ModuleRetired":
    case "ModuleAssigned": case "SeatAliased": case "SeatHandedOver":
    case "OverlayPlaced": case "ProvisionMinted": case "ProvisionRotated": case "DeclarationSent":
    case "CommitVoided": case "RecordsRestored":
      return credentials;
    default:
      return assertNever(event);
  }
}

/** The current credential of a principal, or undefined when it has none. */
export function credentialOf(state: CredentialsState, principal: Principal): CredentialRecord | undefined {
  return getIn(state, principalKey(principal.kind, principal.name));
}

/** The credential filed under principal key `key` (`<kind>:<name>`, principalKey), or undefined. */
export function credentialAt(state: CredentialsState, key: string): CredentialRecord | undefined {
  return getIn(state, key);
}

/** Every current credential, in no particular order (sort where the order shows). */
export function everyCredential(state: CredentialsState): CredentialRecord[] {
  return valuesIn(state);
}

/** Every current credential with its principal key, in no particular order (sort where the order shows). */
export function credentialEntries(state: CredentialsState): [string, CredentialRecord][] {
  return entriesIn(state);
}
