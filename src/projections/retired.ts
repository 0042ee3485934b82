import type { Draft } from "immer";
import type { Principal } from "../events/index.ts";
import { principalKey } from "../names.ts";
import type { SliceFold } from "./slice.ts";
import { credentialOf } from "./credentials.ts";
import { nodeOf } from "./nodes.ts";

/** Why a public key left the records: its node was removed, it was replaced by another, or revoked. */
export type RetiredWhy = "node-removed" | "rotated" | "revoked";

/**
 * A public key the records once held and no longer do (R66): which kind (`nkey`, a bus user's key;
 * `sealing`, a node's X25519 key secrets are sealed to), whose it was, why and when it went (the
 * event's time and the records sequence of its commit).
 */
export type RetiredKey = { kind: "nkey" | "sealing"; principal: Principal; why: RetiredWhy; at: string; sequence: number };

/** Every retired public key by its text (an nkey `U...` and a base64 X25519 key never look alike); never pruned. Read it with retiredKeyOf. */
export type RetiredState = ReadonlyMap<string, RetiredKey>;

type Retire = (key: string | undefined, kind: RetiredKey["kind"], principal: Principal, why: RetiredWhy) => void;

/** A retire function over `retired` for an event at `at` in the commit at `sequence`: a key retired twice keeps the latest retirement. */
function retirer(retired: Draft<RetiredState>, at: string, sequence: number): Retire {
  return (key, kind, principal, why) => {
    if (key !== undefined) retired.set(key, { kind, principal: { ...principal }, why, at, sequence });
  };
}

/**
 * Fold of the events that take a public key out of the records (R66): a credential replaced by one
 * of another key (CredentialRotated, or a CredentialMinted over a recorded one), revoked, or its
 * node removed (the node's nkey and its X25519 key). Reads the nodes and credentials as they were
 * BEFORE the event (the keys it ends): `retired` comes first in the fold's order (fold.ts).
 */
export const retiredFold: SliceFold<RetiredState> = {
  CredentialMinted: (retired, event, { sequence, slices }) => {
    const old = credentialOf(slices.credentials, event.principal)?.nkey;
    if (old !== event.nkey) retirer(retired, event.at, sequence)(old, "nkey", event.principal, "rotated");
  },
  CredentialRotated: (retired, event, { sequence, slices }) => {
    const old = credentialOf(slices.credentials, event.principal)?.nkey;
    if (old !== event.nkey) retirer(retired, event.at, sequence)(old, "nkey", event.principal, "rotated");
  },
  CredentialRevoked: (retired, event, { sequence, slices }) => {
    retirer(retired, event.at, sequence)(credentialOf(slices.credentials, event.principal)?.nkey, "nkey", event.principal, "revoked");
  },
  NodeRemoved: (retired, event, { sequence, slices }) => {
    const principal: Principal = { kind: "node", name: event.node };
    const retire = retirer(retired, event.at, sequence);
    retire(credentialOf(slices.credentials, principal)?.nkey, "nkey", principal, "node-removed");
    retire(nodeOf(slices.nodes, event.node)?.publicKey, "sealing", principal, "node-removed");
  },
};

/** The retirement of public key `key` (an nkey or a node's X25519 key), or undefined when the records never retired it. */
export function retiredKeyOf(retired: RetiredState, key: string): RetiredKey | undefined {
  return retired.get(key);
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
