import type { Principal } from "../events/index.ts";
import { CONTROLLER_NAME, principalKey } from "../names.ts";
import { DeliveredMap, forgetDeliveries } from "./deliveredMap.ts";
import { peek, withInserted, type EventOf, type SliceFold } from "./slice.ts";

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
/** Current credentials by principal key (`<kind>:<name>`): read it with credentialOf, credentialAt and everyCredential. */
export type CredentialsState = DeliveredMap<CredentialRecord>;

/**
 * The principal whose credential a module's declaration carries: the controller's own for the
 * controller's module (`mesh-controller` runs with the controller's credential), the module's else.
 */
export function principalOfModule(module: string): Principal {
  return module === CONTROLLER_NAME ? { kind: "controller", name: CONTROLLER_NAME } : { kind: "module", name: module };
}

/**
 * A minted or rotated credential's record: `sequence` is the records sequence of the commit the
 * event is in (kept as `rotatedAt` by a rotation; a rotation with `overlap` keeps the key it
 * replaced, `replaced`, as `previous`, R73).
 */
function minted(event: EventOf<"CredentialMinted"> | EventOf<"CredentialRotated">, sequence: number, replaced: string | undefined): CredentialRecord {
  return {
    principal: event.principal,
    user: event.user,
    ...(event.nkey !== undefined ? { nkey: event.nkey } : {}),
    ...(event.hash !== undefined ? { hash: event.hash } : {}),
    ...(event.sealed !== undefined ? { sealed: event.sealed } : {}),
    address: event.address,
    mintedAt: event.at,
    ...(event.type === "CredentialRotated" ? { rotatedAt: sequence } : {}),
    ...(replaced !== undefined && replaced !== event.nkey ? { previous: { nkey: replaced, rotatedAt: sequence } } : {}),
  };
}

/**
 * Fold of minting, rotation and revocation (records are replaced, never changed but for their
 * `deliveredTo`). A removed node's credential goes with it. A module unassigned from a node leaves
 * that node in its credential's `deliveredTo` (R48).
 */
export const credentialsFold: SliceFold<CredentialsState> = {
  CredentialMinted: (credentials, event, { sequence }) => {
    credentials.set(principalKey(event.principal.kind, event.principal.name), minted(event, sequence, undefined));
  },
  CredentialRotated: (credentials, event, { sequence }) => {
    const key = principalKey(event.principal.kind, event.principal.name);
    const replaced = event.overlap === true ? credentials.get(key)?.nkey : undefined;
    credentials.set(key, minted(event, sequence, replaced));
  },
  ModuleUnassigned: (credentials, event) => {
    const principal = principalOfModule(event.module);
    const key = principalKey(principal.kind, principal.name);
    const record = peek(credentials, key);
    const deliveredTo = record === undefined ? undefined : withInserted(record.deliveredTo, event.node);
    if (record !== undefined && deliveredTo !== undefined) credentials.set(key, { ...record, deliveredTo });
  },
  CredentialRevoked: (credentials, event) => {
    credentials.delete(principalKey(event.principal.kind, event.principal.name));
  },
  NodeRemoved: (credentials, event) => {
    // Every credential delivered to the node is rotated in the removal's own commit (R48), so
    // the removed node leaves no one's delivery list.
    credentials.delete(principalKey("node", event.node));
    forgetDeliveries(credentials, event.node);
  },
};

/** The current credential of a principal, or undefined when it has none. */
export function credentialOf(state: CredentialsState, principal: Principal): CredentialRecord | undefined {
  return state.get(principalKey(principal.kind, principal.name));
}

/** The credential filed under principal key `key` (`<kind>:<name>`, principalKey), or undefined. */
export function credentialAt(state: CredentialsState, key: string): CredentialRecord | undefined {
  return state.get(key);
}

/** Every current credential, in no particular order (sort where the order shows). */
export function everyCredential(state: CredentialsState): CredentialRecord[] {
  return [...state.values()];
}

/** Every current credential with its principal key, in no particular order (sort where the order shows). */
export function credentialEntries(state: CredentialsState): [string, CredentialRecord][] {
  return [...state.entries()];
}
