/**
 * `replay` (R44, R45): the operator's command over the records themselves. Served by the shell
 * (src/bootstrap/replayVerb.ts), because it reads the records from sequence 1 and may append past
 * a commit the fold cannot read; its decisions are here, pure.
 *
 * - `{}`: fold from sequence 1 ignoring snapshots, validate every commit, report (changes nothing);
 * - `{ void: <seq>, reason }`: void the commit the fold stopped at (CommitVoided, R45);
 * - `{ acceptRestore: true }`: accept the records as they are (RecordsRestored, R44) and give every
 *   principal a fresh credential and every provision a fresh secret in the same commit
 *   (decideAcceptRestore); a node's key, generated on the node, is taken from the list the bus ran
 *   instead (R64).
 */
import { ReplayRequest } from "../contracts/verbs.ts";
import type { MeshEvent, Principal } from "../events/index.ts";
import { busUser, RECORDS_ENTITY } from "../names.ts";
import { BOOTSTRAP_NKEY } from "../genesis.ts";
import { credentialOf, everyCredential, everyProvision, provisionsInKeyOrder, type State } from "../projections/index.ts";
import { metaOf, refuse, type Decision, type Envelope } from "./envelope.ts";
import { NO_MESH_MESSAGE, addressFor, secretAt } from "./shared.ts";

/** The verb, on the asker's command subject (names.ts commandSubject, R51; sent by `mesh replay` through the CLI's send function as its asker). */
export const REPLAY_VERB = "replay";


/** `replay {void?, reason?, acceptRestore?}` (src/contracts/verbs.ts). */
export { ReplayRequest };

/** What the fold stopped at: the sequence and event types of the commit it cannot read (InvalidEvent). */
export type Held = { sequence: number; types: readonly string[] };

/**
 * Decides a void (R45): only the commit the fold stopped at can be voided (a commit already
 * folded is part of the state and of every snapshot since: voiding it would make replay and
 * snapshot + tail differ, R41). Refusals: `invalid-request` (no reason, field `reason`),
 * `not-voidable` (nothing is held, or another sequence is, field `void`). Pure.
 */
export function decideVoid(held: Held | null, request: ReplayRequest, envelope: Envelope): Decision {
  const sequence = request.void;
  if (sequence === undefined) return refuse("invalid-request", "\"void\": name the sequence to void", "void");
  if (request.reason === undefined) return refuse("invalid-request", "\"reason\": say why the commit is voided (it stays in the records)", "reason");
  if (held === null) {
    return refuse("not-voidable", `the records fold to their end: no commit stops the fold, and a folded commit (${sequence}) cannot be voided`, "void");
  }
  if (held.sequence !== sequence) {
    return refuse("not-voidable", `the fold stops at sequence ${held.sequence} (${held.types.join(", ") || "no event types"}), not ${sequence}: void that one first`, "void");
  }
  return {
    ok: true,
    entity: { ...RECORDS_ENTITY },
    events: [{ ...metaOf(envelope), type: "CommitVoided", sequence, types: [...held.types], reason: request.reason }],
  };
}

/** One piece of evidence that the records were behind (R43), as RecordsRestored keeps it. */
export type Evidence = { kind: string; detail: string };

/**
 * The principals an accepted restore gives a fresh credential (R44): every principal with a
 * credential in the records, sorted by kind and name, the controller's own included (its
 * pre-restore key must not stay good either; the next push switches it by the one R50
 * mechanism, push's adoptControllerCredential: staged, sent in the list, committed once the broker
 * applies it), and the asking operator's (a key it rotated away after the backup is the one
 * the records hold; its fresh one comes back in the reply, kept by its CLI like any own rotation,
 * R50, and the old one is admitted until that push, which it sends). Pure.
 */
export function restorePrincipals(state: State): Principal[] {
  return everyCredential(state.credentials)
    .map(({ principal }) => ({ kind: principal.kind, name: principal.name }))
    .sort((a, b) => (a.kind === b.kind ? (a.name < b.name ? -1 : a.name > b.name ? 1 : 0) : a.kind < b.kind ? -1 : 1));
}

/** A principal the records' user list holds that the broker's installed list lacks (R44). */
export type AbsentPrincipal = { kind: Principal["kind"]; name: string; user: string };

/**
 * The converse of "unknown to the records" (R44): the principals whose user the accepted records'
 * composed list holds (`records`, each user with its principal) but the list the bus actually runs
 * (`installed`, the broker holder's last report) lacks. The likely causes: removed after the backup
 * (the records put it back), or enrolled/issued and never pushed. Their fresh credentials are
 * minted like every other (every old key dies) but never handed out in the reply: the
 * operator removes them again or rotates them deliberately. The asker (`asker`, its bus user) and
 * the controller are on the bus by evidence (one sent this command, the other serves it), so they
 * are never named. `installed` undefined (no report): no evidence, nothing named. Sorted by kind,
 * then name. Pure.
 */
export function absentFromInstalledList(
  records: ReadonlyArray<{ user: string; principal: Principal }>,
  installed: readonly string[] | undefined,
  asker: string,
): AbsentPrincipal[] {
  if (installed === undefined) return [];
  const on = new Set(installed);
  return records
    .filter((r) => !on.has(r.user) && r.user !== asker && r.principal.kind !== "controller")
    .map((r) => ({ kind: r.principal.kind, name: r.principal.name, user: r.user }))
    .sort((a, b) => (a.kind === b.kind ? (a.name < b.name ? -1 : a.name > b.name ? 1 : 0) : a.kind < b.kind ? -1 : 1));
}

/**
 * Fresh credentials per commit of an accepted restore: ~350 bytes each keeps a commit far under the
 * bus's 1 MiB message limit at any mesh size (R58, R59).
 */
export const ROTATIONS_PER_COMMIT = 500;

/**
 * The keys of the list the bus ran before the restore was accepted (the broker holder's last
 * report: user name → nkey), or undefined when no report says.
 */
export type InstalledKeys = Readonly<Record<string, string>> | undefined;

/**
 * What an accepted restore does to a node's credential (R44, R64). A node's key pair was generated
 * on the node and the controller cannot make it a new one, nor does it need to for what the backup
 * held: the records never held a node's seed. What the backup may hold is a stale public key: one
 * the node rotated away after the backup, or one of a node removed after it. So the list the bus
 * ran before the restore decides, by the node's user: a different key there is the node's current
 * one (CredentialRotated onto it, the backup's key is on no list again); no entry means the bus ran
 * without the node (removed after the backup, or never pushed): CredentialRevoked, so its key from
 * the backup is refused (the way back is `mesh node remove` and a new enrolment); the same key, or
 * no report at all (no evidence): unchanged. A node whose key would be the genesis bootstrap key
 * (enrolled on it before enrolment refused it, R13: its seed is public) is revoked either way.
 * Pure.
 */
function nodeRestore(state: State, node: string, installed: InstalledKeys, meta: ReturnType<typeof metaOf>): MeshEvent | undefined {
  const principal: Principal = { kind: "node", name: node };
  const recorded = credentialOf(state.credentials, principal);
  if (!recorded) return undefined;
  const user = busUser("node", node);
  if (installed === undefined) return recorded.nkey === BOOTSTRAP_NKEY ? { ...meta, type: "CredentialRevoked", principal } : undefined;
  const key = installed[user];
  if (key === undefined || key === BOOTSTRAP_NKEY) return { ...meta, type: "CredentialRevoked", principal };
  if (key === recorded.nkey) return undefined;
  return { ...meta, type: "CredentialRotated", principal, user, nkey: key, address: addressFor(state, principal) };
}

/**
 * For each of `principals` that still has a credential: a node's as nodeRestore says; every other
 * kind's CredentialRotated with secret #i for the i-th (a key pair the controller mints). Pure.
 */
function rotations(state: State, principals: readonly Principal[], envelope: Envelope, installed: InstalledKeys = undefined): MeshEvent[] {
  const meta = metaOf(envelope);
  const events: MeshEvent[] = [];
  principals.forEach((principal, i) => {
    if (principal.kind === "node") {
      const event = nodeRestore(state, principal.name, installed, meta);
      if (event) events.push(event);
      return;
    }
    const secret = secretAt(envelope, i);
    events.push({
      ...meta, type: "CredentialRotated", principal, user: busUser(principal.kind, principal.name),
      nkey: secret.nkey, sealed: secret.sealed, address: addressFor(state, principal),
    });
  });
  return events;
}

/**
 * The fresh secrets an accepted restore's first commit takes (decideAcceptRestore): one per
 * principal of its first ROTATIONS_PER_COMMIT, then one per minted provision. Pure.
 */
export function restoreSecretsNeeded(state: State): number {
  return Math.min(restorePrincipals(state).length, ROTATIONS_PER_COMMIT) + everyProvision(state.provisions).length;
}

/**
 * A ProvisionRotated for every minted provision, sorted by its key, the i-th taking the sealed
 * seed of secret #(first + i) as its new secret (32 random bytes, as a minted provision's). Pure.
 */
function provisionRotations(state: State, envelope: Envelope, first: number): MeshEvent[] {
  const meta = metaOf(envelope);
  return provisionsInKeyOrder(state.provisions).map((p, i) => {
    return { ...meta, type: "ProvisionRotated", seat: p.seat, provision: p.provision, consumer: p.consumer, user: p.user, sealed: secretAt(envelope, first + i).sealed };
  });
}

/**
 * Decides an accepted restore (R44): one commit about the records holding RecordsRestored (actor,
 * evidence, lost range) and a CredentialRotated for each of the first ROTATIONS_PER_COMMIT of
 * restorePrincipals, secret #i for the i-th, at the address each would be minted at now
 * (addressFor, R7); the rest follow in commits of their own (decideRestoreRotations). The
 * credentials are usable from the next push, which installs the user list without any key the
 * backup held (removed principals are not in the records at all). Nodes are not minted a key (it
 * is generated on the node, R64): `installed`, the keys of the list the bus ran, decides theirs
 * (nodeRestore). Then a ProvisionRotated for every minted provision, with the secrets after the
 * principals' (restoreSecretsNeeded): the records cannot know which provision secrets reached a
 * node removed after the backup, so none is kept; the next push delivers the fresh ones to the
 * consumer's and the provider's nodes. Refusals: `no-mesh`. Pure.
 */
export function decideAcceptRestore(
  state: State,
  evidence: readonly Evidence[],
  lost: { from: number; to: number } | null,
  envelope: Envelope,
  installed: InstalledKeys = undefined,
): Decision {
  if (!state.mesh) return refuse("no-mesh", NO_MESH_MESSAGE);
  const restored: MeshEvent = { ...metaOf(envelope), type: "RecordsRestored", evidence: evidence.map((e) => ({ kind: e.kind, detail: e.detail })), lost };
  const first = restorePrincipals(state).slice(0, ROTATIONS_PER_COMMIT);
  return {
    ok: true,
    entity: { ...RECORDS_ENTITY },
    events: [restored, ...rotations(state, first, envelope, installed), ...provisionRotations(state, envelope, first.length)],
  };
}

/**
 * One further commit of an accepted restore's fresh credentials (R44): a CredentialRotated for
 * each of `principals` (a later slice of restorePrincipals) that still has a credential; `unchanged`
 * when none has. Pure.
 */
export function decideRestoreRotations(state: State, principals: readonly Principal[], envelope: Envelope, installed: InstalledKeys = undefined): Decision {
  const still = principals.filter((p) => credentialOf(state.credentials, p) !== undefined);
  const events = rotations(state, still, envelope, installed);
  if (events.length === 0) return { ok: true, unchanged: true, entity: { ...RECORDS_ENTITY }, events: [] };
  return { ok: true, entity: { ...RECORDS_ENTITY }, events };
}
