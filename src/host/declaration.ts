import { z } from "zod";

/**
 * A declaration as the host receives it on `declarationSubject(node)` (DESIGN.md section 7).
 *
 * The controller composes it (src/compose, composeDeclaration) and re-seals every secret to the
 * node's X25519 public key before publishing (push), so a `sealed` field here opens only with this
 * node's private key (openAsNode). The host reads only the fields it applies and lets the rest pass,
 * so a newer controller that adds a field does not stop an older host.
 */

/** The credential of a module: the password sealed to the node's key, never in the clear (R3). */
export const DeclaredCredential = z
  .object({
    address: z.string().min(1),
    user: z.string().min(1),
    sealed: z.string().min(1),
    fingerprint: z.string().optional(),
  })
  .passthrough();
export type DeclaredCredential = z.infer<typeof DeclaredCredential>;

/** A provision a module receives from a seat's holder: a login, its secret sealed to the node. */
export const ReceivedProvision = z
  .object({ seat: z.string().min(1), provision: z.string().min(1), user: z.string(), sealed: z.string().min(1) })
  .passthrough();
export type ReceivedProvision = z.infer<typeof ReceivedProvision>;

/** A grant a provider on this node holds for one consumer of its seat (the login it must create). */
export const ProvisionGrant = z
  .object({ seat: z.string().min(1), provision: z.string().min(1), consumer: z.string().min(1), user: z.string(), sealed: z.string().min(1) })
  .passthrough();
export type ProvisionGrant = z.infer<typeof ProvisionGrant>;

/**
 * One module the node is to hold: what to run, its bus credential, its environment (the host adds
 * MESH_PASSWORD once it opened the credential) and the provisions it receives.
 */
export const DeclaredModule = z
  .object({
    module: z.string().min(1),
    version: z.string().optional(),
    run: z.unknown().optional(),
    credential: DeclaredCredential.optional(),
    env: z.record(z.string(), z.string()).optional(),
    provisions: z.array(ReceivedProvision).default([]),
  })
  .passthrough();
export type DeclaredModule = z.infer<typeof DeclaredModule>;

/**
 * How a declaration names the user list that travels beside it in parts (UserListRef of
 * src/compose): the digest (sha256 hex) of its UTF-8 text, its size in bytes, its part count.
 */
export const DeclaredUserList = z
  .object({ digest: z.string().min(1), bytes: z.number().int().nonnegative(), parts: z.number().int().positive() })
  .passthrough();
export type DeclaredUserList = z.infer<typeof DeclaredUserList>;

/**
 * Everything the mesh wants one node to hold. `modules` and `provisions` may be empty (an empty
 * declaration is still applied, R29); `userList` is present only for the node that holds
 * mesh-broker (R11) and names the nats-server include text that arrived before it in parts
 * (UserListParts); `digest` is what the node reports back (R32).
 */
export const HostDeclaration = z
  .object({
    node: z.string().min(1),
    /** The node's own bus credential (sealed to its key): the host saves it and dials with it. */
    self: DeclaredCredential.optional(),
    modules: z.array(DeclaredModule).default([]),
    userList: DeclaredUserList.optional(),
    provisions: z.array(ProvisionGrant).default([]),
    digest: z.string().min(1),
    /** The records' sequence the declaration was composed from (outside the digest; reported back, R43). */
    recordsSequence: z.number().int().nonnegative().optional(),
  })
  .passthrough();
export type HostDeclaration = z.infer<typeof HostDeclaration>;

/** What a node publishes on `reportSubject(node)` after each declaration (R32). */
export type HostReport = {
  node: string;
  digest: string;
  ok: boolean;
  /** Why the declaration was not applied (never a password, R3). Present when ok is false. */
  error?: string;
  /** The user-list parts still missing when ok is false for that reason (0-based indexes). */
  missingParts?: number[];
  /**
   * The records' sequence of the declaration applied (its `recordsSequence`), when it named one:
   * a report ahead of the records shows them restored or their tail lost (R43).
   */
  recordsSequence?: number;
  /** The users on the installed list, by name (the broker's holder, after installing one, R43/R44). */
  users?: string[];
  /**
   * R55: the files of this declaration a re-check found missing or changed and wrote back (paths
   * under the state folder, sorted). Present only on a report a re-check published.
   */
  drift?: string[];
};

/** The user names of a user-list include file as renderUserList writes it (one `{user: "..."` per line). */
export function usersOfListText(text: string): string[] {
  return [...text.matchAll(/\{user: ("(?:[^"\\]|\\.)*")/g)].map((m) => JSON.parse(m[1]!) as string);
}
