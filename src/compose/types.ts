import type { Principal } from "../events/index.ts";
import type { Refusal } from "../decision.ts";

/**
 * What composition needs besides the records (DESIGN.md section 3). Read once by the shell from
 * the controller's configuration and passed in: compose reads no environment.
 */
export type ComposeConfig = {
  /** The seats the controller submits work to (R19): a stated list, not derived from a manifest. */
  controllerSubmits: readonly string[];
  /** Replicas of every stream (1 on a single server, 3 on a cluster). Default 1. */
  replicas?: number;
};

/** `pub` or `sub`: the two directions a grant can have. */
export type Direction = "pub" | "sub";

/** One grant with its provenance: which manifest line or record allows it (for `mesh explain`). */
export type Grant = { direction: Direction; subject: string; because: string };

/**
 * A principal's bus permissions in nats-server's own shape: deny by default, exact allow lists,
 * sorted and deduplicated; a publish deny only where an allow wildcard must not reach (R47). `allow_responses` lets a responder publish one reply to the inbox of a
 * request it received, without a publish grant on anyone's inbox (R33).
 */
export type Permissions = {
  /** `deny` (R47): subjects refused even where an allow covers them (the records' erasure API). */
  publish: { allow: string[]; deny?: string[] };
  subscribe: { allow: string[] };
  allow_responses?: boolean;
};

/**
 * One user of the bus's user list (R63): the principal's nkey public key (`U...`) from the
 * records, its name (`user`, kept readable beside the key) and its permissions. No secret and no
 * hash: the bus checks a signature of its nonce against the key.
 */
export type BusUser = {
  user: string;
  nkey: string;
  permissions: Permissions;
  principal: Principal;
  /**
   * R73: present on a principal's previous key, admitted beside its current one until `until` (its
   * module's nodes) report the new one; `rotatedAt` is the rotation's records sequence.
   */
  overlap?: { rotatedAt: number; until: readonly string[] };
};

/** A principal left out of the user list, and why (R12: named in the push's report). */
export type LeftOut = { principal: Principal; reason: string };

/** The composed user list, or the refusal of one with no users (R12). */
export type BusUsers =
  | { ok: true; users: BusUser[]; leftOut: LeftOut[] }
  | { ok: false; refusal: Refusal; leftOut: LeftOut[] };

export type { Principal, Refusal };
