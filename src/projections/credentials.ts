import type { Draft } from "immer";
import type { MeshEvent, Principal } from "../events/index.ts";
import { CONTROLLER_NAME, principalKey } from "../names.ts";
import { assertNever } from "./assertNever.ts";
import { deleteIn, emptyBuckets, entriesIn, getIn, keysIn, setIn, valuesIn, type Buckets } from "./buckets.ts";

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
};
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
 * A long fold's index of `deliveredTo`: node → keys of the credentials that may name it. A superset
 * (a key is checked against its record before use, never removed when a record is replaced), built
 * from the state on first use, so a NodeRemoved looks at those credentials instead of every one.
 * Owned by one fold (startFold) over one working state; never part of the state.
 */
export type DeliveryIndex = { byNode: Map<string, Set<string>> | null };

/**
 * A fresh delivery index for one fold: unbuilt (built from the working state on first use), or
 * built now from `from`, the state the fold starts with (evolve: a scan of plain records instead
 * of one immer draft per record when a commit removes a node).
 */
export function newDeliveryIndex(from?: CredentialsState): DeliveryIndex {
  const index: DeliveryIndex = { byNode: null };
  if (from !== undefined) deliveriesOf(index, from);
  return index;
}

function deliveriesOf(index: DeliveryIndex, draft: Draft<CredentialsState>): Map<string, Set<string>> {
  if (index.byNode === null) {
    index.byNode = new Map();
    for (const [key, record] of entriesIn(draft)) {
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
 * Fold of minting, rotation and revocation. A removed node's credential goes with it. `sequence`
 * is the records sequence of the commit the event is in (kept as `rotatedAt` by a rotation).
 * A module unassigned from a node leaves that node in its credential's `deliveredTo` (R48).
 * `index` (a long fold's, optional) only makes a NodeRemoved cheaper: the result is the same.
 */
export function evolveCredentials(draft: Draft<CredentialsState>, event: MeshEvent, sequence = 0, index?: DeliveryIndex): void {
  switch (event.type) {
    case "CredentialMinted":
    case "CredentialRotated":
      setIn(draft, principalKey(event.principal.kind, event.principal.name), {
        principal: event.principal,
        user: event.user,
        ...(event.nkey !== undefined ? { nkey: event.nkey } : {}),
        ...(event.hash !== undefined ? { hash: event.hash } : {}),
        ...(event.sealed !== undefined ? { sealed: event.sealed } : {}),
        address: event.address,
        mintedAt: event.at,
        ...(event.type === "CredentialRotated" ? { rotatedAt: sequence } : {}),
      });
      return;
    case "ModuleUnassigned": {
      const principal = principalOfModule(event.module);
      const key = principalKey(principal.kind, principal.name);
      const record = getIn(draft, key);
      if (record && !(record.deliveredTo ?? []).includes(event.node)) {
        record.deliveredTo = [...(record.deliveredTo ?? []), event.node].sort();
        if (index?.byNode) noteDelivery(index.byNode, event.node, key);
      }
      return;
    }
    case "CredentialRevoked":
      deleteIn(draft, principalKey(event.principal.kind, event.principal.name));
      return;
    case "NodeRemoved": {
      // Every credential delivered to the node is rotated in the removal's own commit (R48), so
      // the removed node leaves no one's delivery list.
      deleteIn(draft, principalKey("node", event.node));
      // With an index, only the credentials that may name the node; without, every one.
      const keys = index ? (deliveriesOf(index, draft).get(event.node) ?? []) : keysIn(draft);
      for (const key of keys) {
        const record = getIn(draft, key);
        if (record?.deliveredTo !== undefined && record.deliveredTo.includes(event.node)) {
          const left = record.deliveredTo.filter((n) => n !== event.node);
          if (left.length === 0) delete record.deliveredTo;
          else record.deliveredTo = left;
        }
      }
      index?.byNode?.delete(event.node);
      return;
    }
    case "MeshCreated": case "NodeEnrolled": case "ModuleRegistered": case "ModuleIssued":
    case "ModuleAssigned": case "SeatAliased": case "SeatHandedOver":
    case "OverlayPlaced": case "ProvisionMinted": case "ProvisionRotated": case "DeclarationSent":
    case "CommitVoided": case "RecordsRestored":
      return;
    default:
      assertNever(event);
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
