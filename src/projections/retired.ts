import type { MeshEvent, Principal } from "../events/index.ts";
import { principalKey } from "../names.ts";
import { assertNever } from "./assertNever.ts";
import { emptyBuckets, getIn, setIn, type Buckets, type Owned } from "./buckets.ts";
import { credentialOf, type CredentialsState } from "./credentials.ts";
import { nodeOf, type NodesState } from "./nodes.ts";

/** Why a public key left the records: its node was removed, it was replaced by another, or revoked. */
export type RetiredWhy = "node-removed" | "rotated" | "revoked";

/**
 * A public key the records once held and no longer do (R66): which kind (`nkey`, a bus user's key;
 * `sealing`, a node's X25519 key secrets are sealed to), whose it was, why and when it went (the
 * event's time and the records sequence of its commit).
 */
export type RetiredKey = { kind: "nkey" | "sealing"; principal: Principal; why: RetiredWhy; at: string; sequence: number };

/**
 * Every retired public key by its text (an nkey `U...` and a base64 X25519 key never look alike), a
 * bucketed map (buckets.ts): it grows with the history and is never pruned. Read it with retiredKeyOf.
 */
export type RetiredState = Buckets<RetiredKey>;

export const initialRetired: RetiredState = emptyBuckets();

/**
 * Fold of the events that take a public key out of the records (R66): a credential replaced by one
 * of another key (CredentialRotated, or a CredentialMinted over a recorded one), revoked, or its
 * node removed (the node's nkey and its X25519 key). Reads the nodes and credentials as they were
 * BEFORE `event` (the keys it ends), so the fold driver calls it before their own evolves. A key
 * retired twice keeps the latest retirement. `owned`: see buckets.ts setIn.
 */
export function evolveRetired(
  retired: RetiredState, event: MeshEvent, owned: Owned, sequence: number, nodes: NodesState, credentials: CredentialsState,
): RetiredState {
  const retire = (map: RetiredState, key: string | undefined, kind: RetiredKey["kind"], principal: Principal, why: RetiredWhy): RetiredState =>
    key === undefined ? map : setIn(map, key, { kind, principal: { ...principal }, why, at: event.at, sequence }, owned);
  switch (event.type) {
    case "CredentialMinted":
    case "CredentialRotated": {
      const old = credentialOf(credentials, event.principal)?.nkey;
      return old === event.nkey ? retired : retire(retired, old, "nkey", event.principal, "rotated");
    }
    case "CredentialRevoked":
      return retire(retired, credentialOf(credentials, event.principal)?.nkey, "nkey", event.principal, "revoked");
    case "NodeRemoved": {
      const principal: Principal = { kind: "node", name: event.node };
      const after = retire(retired, credentialOf(credentials, principal)?.nkey, "nkey", principal, "node-removed");
      return retire(after, nodeOf(nodes, event.node)?.publicKey, "sealing", principal, "node-removed");
    }
    case "MeshCreated": case "NodeEnrolled": case "ModuleRegistered": case "ModuleIssued": case "ModuleRetired":
    case "ModuleAssigned": case "ModuleUnassigned": case "SeatAliased": case "SeatHandedOver":
    case "OverlayPlaced": case "ProvisionMinted": case "ProvisionRotated": case "DeclarationSent":
    case "CommitVoided": case "RecordsRestored":
      return retired;
    default:
      return assertNever(event);
  }
}

/** The retirement of public key `key` (an nkey or a node's X25519 key), or undefined when the records never retired it. */
export function retiredKeyOf(retired: RetiredState, key: string): RetiredKey | undefined {
  return getIn(retired, key);
}

const WHY_WORDS: Record<RetiredWhy, (principal: string) => string> = {
  "node-removed": (principal) => `when ${principal} was removed`,
  rotated: (principal) => `when ${principal}'s credential was rotated onto another key`,
  revoked: (principal) => `when ${principal}'s credential was revoked`,
};

/** One line saying whose a retired key was, when and why it went: "node:w3's, retired at <at> (records sequence N) when node:w3 was removed". */
export function retiredKeyText(record: RetiredKey): string {
  const principal = principalKey(record.principal.kind, record.principal.name);
  return `${principal}'s, retired at ${record.at} (records sequence ${record.sequence}) ${WHY_WORDS[record.why](principal)}`;
}
