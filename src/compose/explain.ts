import type { State } from "../projections/index.ts";
import { credentialOf, lastUserListSequence } from "../projections/index.ts";
import { overlapNodesOf } from "./overlap.ts";
import { grantsOf } from "./permissions.ts";
import { covers } from "./subjects.ts";
import type { ComposeConfig, Direction, Grant, Principal } from "./types.ts";

/** Why a principal may or may not publish or subscribe a subject (for `mesh explain`). */
export type Explanation = {
  principal: Principal;
  user: string;
  direction: Direction;
  subject: string;
  allowed: boolean;
  /** The grants that allow it, each with the manifest line or record behind it. */
  because: Grant[];
  /** When nothing allows it (or only as a reply): why, in words. */
  reason?: string;
  /** False when the principal has no credential: it is not on the bus at all (R12). */
  onTheBus: boolean;
  /**
   * When the principal's current credential was minted or rotated (ISO 8601): the answer is about
   * that credential alone; a key it replaced (a rotation, a removed node's copy, R48) is
   * refused by the bus once the push that carries the new one is applied.
   */
  credentialSince?: string;
  /** Present when that credential's key is on no user list sent yet (credentialNote). */
  keyUnsent?: true;
  /** R73: the nodes whose report of the new key ends the admission of the key it replaced (credentialNote). */
  previousKeyUntil?: string[];
};

/**
 * What an answer says of the principal's current credential (none when it has none):
 * `credentialSince`, when it was minted or rotated; and `keyUnsent` when it was rotated after the
 * records the user list last sent to the broker's holders was composed from (its `rotatedAt` past
 * lastUserListSequence): the key in the records is not on the bus yet, the next push installs it,
 * and until that list is applied the bus admits the key it replaced (R50). A rotation can be
 * told from the records; whether the list sent was applied is the holder's report, not theirs.
 * `previousKeyUntil` (R73): a rotated module's nodes, whose report of the new key ends the
 * admission of the one it replaced (whether they reported is theirs to say, not the records'). Pure.
 */
export function credentialNote(state: State, principal: Principal): { credentialSince?: string; keyUnsent?: true; previousKeyUntil?: string[] } {
  const credential = credentialOf(state.credentials, principal);
  if (credential === undefined) return {};
  const unsent = credential.rotatedAt !== undefined && credential.rotatedAt > lastUserListSequence(state);
  const until = overlapNodesOf(state, credential);
  return { credentialSince: credential.mintedAt, ...(unsent ? { keyUnsent: true } : {}), ...(until.length > 0 ? { previousKeyUntil: [...until] } : {}) };
}

/**
 * Which manifest line or record allows `principal` to `direction` on `subject`, or why nothing does
 * (deny by default). A subject with wildcards is allowed only when a grant covers all of it, as
 * the server checks. A responder publishing to an inbox no grant names is told whose inboxes it
 * answers on (R33). Pure.
 */
export function explain(state: State, principal: Principal, direction: Direction, subject: string, config: ComposeConfig): Explanation {
  const { grants, responder, user } = grantsOf(state, principal, config);
  const because = grants.filter((g) => g.direction === direction && covers(g.subject, subject));
  const onTheBus = credentialOf(state.credentials, principal) !== undefined;
  const base = { principal, user, direction, subject, onTheBus, ...credentialNote(state, principal) };
  if (because.length > 0) {
    return { ...base, allowed: true, because, ...(onTheBus ? {} : { reason: `${user} has no credential: it is not in the user list yet (R12)` }) };
  }
  if (direction === "pub" && responder && subject.startsWith("_INBOX")) {
    return {
      ...base, allowed: false, because: [],
      reason: `${user} answers requests only on the inboxes of those who may ask it (R33, R74); no grant names ${subject}`,
    };
  }
  return {
    ...base, allowed: false, because: [],
    reason: `deny by default: no manifest line or record grants ${user} ${direction === "pub" ? "publish" : "subscribe"} on ${subject}`,
  };
}
