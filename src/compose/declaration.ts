import type { State } from "../projections/index.ts";
import { assignedModules, brokerReachableAt, busCertificateNames, busAddressesOf, credentialOf, holdersOf, isEnrolled, moduleOf, nodeNames, overlayNameOf, principalOfModule, provisionOf, resolveSeat, seatOf } from "../projections/index.ts";
import { BROKER_SEAT } from "../names.ts";
import { usedSeats, type Manifest } from "../manifest/manifest.ts";
import { CONTRACT_VERSIONS } from "../contracts/version.ts";
import {
  type Declaration, type DeclarationBody, type DeclaredModule, type DeclaredCredential, type NodeSelf, type ProvisionGrant, type ProvisionLogin, type ReceivedProvision,
} from "../contracts/declaration.ts";
import { USER_LIST_PART_BYTES, type UserListRef } from "../contracts/userList.ts";
import { canonicalJson, orderedView, type Digest } from "./digest.ts";
import { moduleEnvironment } from "./environment.ts";
import { sortStrings } from "./sorting.ts";
import { composeBusUsers, renderUserList } from "./userList.ts";
import type { BusUsers, ComposeConfig, Principal, Refusal } from "./types.ts";
import type { OverlapReports } from "./overlap.ts";

/**
 * The declaration and its parts are the contract between the controller and the host
 * (src/contracts/declaration.ts, src/contracts/userList.ts): compose builds them, push sends them,
 * the host parses them with the same schemas. A credential's `sealed` is the secret as the records
 * hold it, sealed with the mesh key: compose is pure and holds no key, so the shell re-seals it to
 * the node's public key at send time, after the digest is taken (the digest is therefore over the
 * stable mesh-sealed form).
 */
export {
  USER_LIST_PART_BYTES, type UserListRef, type Declaration, type DeclaredModule, type DeclaredCredential, type NodeSelf, type ProvisionGrant,
  type ReceivedProvision,
};

/**
 * A composed declaration, or the typed refusal of one node (R30: reported, the rest are sent).
 * `userListText` is the rendered list the declaration's `userList` names (broker holders only).
 */
export type DeclarationResult =
  | { ok: true; declaration: Declaration; userListText?: string; modulesLeftOut?: ModuleLeftOut[] }
  | { ok: false; node: string; refusal: Refusal };

/**
 * A module assigned to the node but left out of its declaration, and why: it has no credential
 * (never issued, or revoked). Only that module is left out: the node, and the user list when it
 * holds mesh-broker, are still composed and sent; the push report names it.
 */
export type ModuleLeftOut = { module: string; reason: string };

/** Any code unit past ASCII. */
const NOT_ASCII = /[\u0080-\uffff]/;

/** The number of bytes `text` takes in UTF-8 (a lone surrogate counts as U+FFFD, 3 bytes). Pure. */
export function utf8Length(text: string): number {
  // A user list is ASCII but for names nobody chose yet: one native scan says so.
  if (!NOT_ASCII.test(text)) return text.length;
  let bytes = 0;
  for (let i = 0; i < text.length; i += 1) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      i += 1;
    } else bytes += 3;
  }
  return bytes;
}

/** Parts a list of `bytes` bytes is cut into: at least one (an empty text is one empty part). */
export function userListPartCount(bytes: number, partBytes: number = USER_LIST_PART_BYTES): number {
  return Math.max(1, Math.ceil(bytes / partBytes));
}

/**
 * Indexes shared by every declaration of one composition, built once so composing every node is
 * linear in the records (not nodes × modules): modules by node, the users of each seat that
 * provides something, the broker holders, and the user list (composed on first need). Lists sorted.
 */
export type Prepared = {
  modulesByNode: Map<string, string[]>;
  usersOfSeat: Map<string, string[]>;
  brokerHolders: Set<string>;
  busUsers(): BusUsers;
  userListText(): string | null;
  /**
   * The list's digest, size and part count, computed once per composition (one composition uses
   * one digest function). Throws when userListText() is null (a list with no users).
   */
  userListRef(digest: Digest): UserListRef;
  /**
   * `brokerReachableAt(state, node)` (R7), remembered by what it reads of the node (the broker's
   * own, on the overlay, off it) so composing every node stays linear. Throws before genesis.
   */
  reachableAt(node: string): string;
  /**
   * The entries of modules assigned to more than one node, by module (a key for each such module),
   * then by the address their node reaches the broker at: an entry reads nothing else of its node,
   * so such a module is composed once per address. Filled by composeDeclaration.
   */
  moduleEntries: Map<string, Map<string, ModuleComposed>>;
  /** holdersOf(state, seat), remembered per seat: a consumer's env names its provision's holders (R75). */
  holdersOf(seat: string): readonly string[];
};

/**
 * One assigned module as composeDeclaration takes it into a node's declaration: its entry (and
 * the provisions it grants as a provider; `ordered` when every object in it has its keys in sorted
 * order, so that JSON.stringify writes it canonically), or why it is left out, or why the node
 * cannot be composed.
 */
type ModuleComposed =
  | { kind: "entry"; entry: DeclaredModule; ordered: boolean; grants: ProvisionGrant[] }
  | { kind: "left-out"; reason: string }
  | { kind: "unregistered" }
  | { kind: "refused"; code: string; message: string };

/**
 * Builds the shared indexes of one composition (see Prepared). O(records). `reports`: the last
 * reports that decide which rotated modules' previous keys the user list still admits (R73).
 */
export function prepareComposition(state: State, config: ComposeConfig, reports?: OverlapReports): Prepared {
  const modulesByNode = new Map<string, string[]>();
  const usersOfSeat = new Map<string, string[]>();
  const moduleEntries = new Map<string, Map<string, ModuleComposed>>();
  // The modules in the records' order; each list is sorted once filled (a node's are few).
  for (const [module, nodes] of assignedModules(state.assignments)) {
    if (nodes.length === 0) continue;
    if (nodes.length > 1) moduleEntries.set(module, new Map());
    for (const node of nodes) {
      const list = modulesByNode.get(node);
      if (list) list.push(module);
      else modulesByNode.set(node, [module]);
    }
    for (const use of usedSeatsOf(moduleOf(state.modules, module)?.manifest)) {
      const seat = resolveSeat(state.modules, use);
      if (seatOf(state.modules, seat)?.provides === undefined) continue;
      const list = usersOfSeat.get(seat);
      // Each module comes once: a seat used twice (under an old and a new name, R27) ends its list with it.
      if (!list) usersOfSeat.set(seat, [module]);
      else if (list[list.length - 1] !== module) list.push(module);
    }
  }
  for (const list of modulesByNode.values()) sortStrings(list);
  for (const list of usersOfSeat.values()) sortStrings(list);
  let users: BusUsers | undefined;
  let text: string | null | undefined;
  const busUsers = (): BusUsers => (users ??= composeBusUsers(state, config, reports));
  const userListText = (): string | null => {
    if (text === undefined) {
      const list = busUsers();
      // R71: the names the bus's certificate must carry travel with the list to the broker's holders.
      text = list.ok ? renderUserList({ users: list.users, ...(state.mesh ? { busNames: busCertificateNames(state) } : {}) }) : null;
    }
    return text;
  };
  let ref: UserListRef | undefined;
  const userListRef = (digest: Digest): UserListRef => {
    if (ref) return ref;
    const listed = userListText();
    if (listed === null) throw new Error("userListRef: the user list has no users (ask userListText first)");
    const bytes = utf8Length(listed);
    ref = { bytes, digest: digest(listed), parts: userListPartCount(bytes) };
    return ref;
  };
  const holders = holdersOf(state, BROKER_SEAT);
  const broker = holders[0] ?? state.overlay.hub;
  const reachByPlacement = new Map<string, string>();
  const reachableAt = (node: string): string => {
    const placement = node === broker ? "broker" : overlayNameOf(state.overlay, node) !== undefined ? "placed" : "off";
    let address = reachByPlacement.get(placement);
    if (address === undefined) {
      address = brokerReachableAt(state, node, broker);
      reachByPlacement.set(placement, address);
    }
    return address;
  };
  const holdersBySeat = new Map<string, readonly string[]>();
  const holdersOfSeat = (seat: string): readonly string[] => {
    let found = holdersBySeat.get(seat);
    if (found === undefined) holdersBySeat.set(seat, found = holdersOf(state, seat));
    return found;
  };
  return { modulesByNode, usersOfSeat, brokerHolders: new Set(holders), busUsers, userListText, userListRef, reachableAt, moduleEntries, holdersOf: holdersOfSeat };
}

/** The seats a manifest uses (usedSeats), none for a module the catalogue lacks. */
function usedSeatsOf(manifest: Manifest | undefined): string[] {
  return manifest ? usedSeats(manifest) : [];
}

function refusal(node: string, code: string, message: string): DeclarationResult {
  return { ok: false, node, refusal: { code, message } };
}

/**
 * Composes one node's declaration from the state (pure; never appends, never runs bcrypt).
 *
 * Refusals (typed, never thrown, R30): `mesh-missing` (no genesis record), `unknown-node` (not
 * enrolled), `module-unregistered` (assigned a module the catalogue lacks), `provision-missing` (a
 * provision push should have minted first, R31), `user-list-empty` (the broker's holder, with a
 * user list of no users, R12). A module assigned without a credential (never issued, or revoked)
 * is not a refusal of the node: that module alone is left out, named in `modulesLeftOut` with the
 * step that fixes it, so one module never blocks its node's other modules nor, on the broker's
 * holder, the user list of the whole mesh.
 * `prepared` lets a caller composing many nodes share the indexes (prepareComposition).
 */
export function composeDeclaration(
  state: State,
  node: string,
  config: ComposeConfig,
  digest: Digest,
  prepared: Prepared = prepareComposition(state, config),
): DeclarationResult {
  if (!state.mesh) return refusal(node, "mesh-missing", "the mesh has no genesis record (MeshCreated): run the installer first");
  if (!isEnrolled(state.nodes, node)) return refusal(node, "unknown-node", `node ${node} is not enrolled`);
  const fingerprint = state.mesh.fingerprint;
  const modules: DeclaredModule[] = [];
  let ordered = true;
  const provisions: ProvisionGrant[] = [];
  const modulesLeftOut: ModuleLeftOut[] = [];
  let reachable: string | undefined;
  for (const module of prepared.modulesByNode.get(node) ?? []) {
    // R10: the address is where this node reaches the broker now, at composition, not the one
    // recorded when the credential was minted: the order of issue, assign and overlay place
    // cannot change what a module dials, and a placement moves it at the next push.
    const address = reachable ??= prepared.reachableAt(node);
    const byAddress = prepared.moduleEntries.get(module);
    let composed = byAddress?.get(address);
    if (!composed) {
      composed = composeModule(state, module, address, fingerprint, prepared);
      byAddress?.set(address, composed);
    }
    switch (composed.kind) {
      case "unregistered":
        return refusal(node, "module-unregistered", `node ${node} is assigned ${module}, which the catalogue does not have`);
      case "refused":
        return refusal(node, composed.code, composed.message);
      case "left-out":
        modulesLeftOut.push({ module, reason: composed.reason });
        break;
      case "entry":
        modules.push(composed.entry);
        ordered &&= composed.ordered;
        for (const grant of composed.grants) provisions.push(grant);
        break;
    }
  }
  provisions.sort(byGrant);
  const own = credentialOf(state.credentials, { kind: "node", name: node });
  // `v` is inside the digest: a declaration of another contract version is another declaration.
  const v = CONTRACT_VERSIONS.declaration;
  let userList: UserListRef | undefined;
  let userListText: string | undefined;
  if (prepared.brokerHolders.has(node)) {
    const text = prepared.userListText();
    if (text === null) {
      const list = prepared.busUsers();
      return { ok: false, node, refusal: list.ok ? { code: "user-list-empty", message: "no user list" } : list.refusal };
    }
    userList = prepared.userListRef(digest);
    userListText = text;
  }
  // R64: the node's own credential names its public key, no secret (it holds the seed).
  const self = own?.nkey !== undefined ? { address: own.address, fingerprint, nkey: own.nkey, user: own.user } : undefined;
  // Members in sorted order, none undefined (see below).
  const body: DeclarationBody = { modules, node, provisions, ...(self ? { self } : {}), ...(userList ? { userList } : {}), v };
  // Every object of the body is built with its keys in sorted order (and no undefined member), so
  // JSON.stringify writes canonicalJson's bytes without a walk to reorder it: composing 10,000
  // declarations spent a third of its time there. canonicalJson stays the definition (the unit
  // tests hold the digest to it) and writes a body with anything out of order.
  const declaration = { ...body, digest: digest(ordered ? JSON.stringify(body) : canonicalJson(body)) };
  return {
    ok: true,
    declaration,
    ...(userListText === undefined ? {} : { userListText }),
    ...(modulesLeftOut.length === 0 ? {} : { modulesLeftOut }),
  };
}

/**
 * One assigned module's entry for nodes that reach the broker at `address` (see ModuleComposed):
 * `unregistered` when the catalogue lacks it, left out when it has no credential or its credential
 * no sealed seed, `provision-missing` when a provision it receives or grants is not minted (R31).
 * Reads nothing of the node but its address, so Prepared.moduleEntries shares it.
 */
function composeModule(state: State, module: string, address: string, fingerprint: string, prepared: Prepared): ModuleComposed {
  const manifest = moduleOf(state.modules, module)?.manifest;
  if (!manifest) return { kind: "unregistered" };
  const principal: Principal = principalOfModule(module);
  const credential = credentialOf(state.credentials, principal);
  if (!credential) return { kind: "left-out", reason: `no credential: run \`mesh module issue ${module}\`, then push` };
  if (credential.sealed === undefined) {
    return { kind: "left-out", reason: `its credential holds no sealed seed: run \`mesh credential rotate ${principal.kind} ${principal.name}\`, then push` };
  }
  const sealed = credential.sealed;
  const received: ReceivedProvision[] = [];
  for (const use of usedSeats(manifest)) {
    const seat = resolveSeat(state.modules, use);
    const provision = seatOf(state.modules, seat)?.provides;
    if (provision === undefined) continue;
    const record = provisionOf(state.provisions, seat, provision, module);
    if (!record) return { kind: "refused", code: "provision-missing", message: `the provision ${provision} of ${seat} for ${module} is not minted (push mints it first, R31)` };
    received.push({ provision, sealed: record.sealed, seat, user: record.user });
  }
  const grants: ProvisionGrant[] = [];
  const logins: ProvisionLogin[] = [];
  for (const claim of manifest.claims) {
    const seat = resolveSeat(state.modules, claim);
    const provision = seatOf(state.modules, seat)?.provides;
    if (provision === undefined) continue;
    for (const consumer of prepared.usersOfSeat.get(seat) ?? []) {
      const record = provisionOf(state.provisions, seat, provision, consumer);
      if (!record) return { kind: "refused", code: "provision-missing", message: `the provision ${provision} of ${seat} for ${consumer} is not minted (push mints it first, R31)` };
      grants.push({ consumer, provision, sealed: record.sealed, seat, user: record.user });
      // R75: the provider is told in its own folder which logins to create (the host adds the secrets).
      logins.push({ consumer, provision, seat, user: record.user });
    }
  }
  // R62: on a cluster the credential lists every server, so the module reconnects to a survivor.
  const addresses = busAddressesOf(state, address);
  // Members in sorted order, as the declaration's canonical JSON writes them; `run` is the
  // manifest's (image before command), reordered.
  const run = orderedView(manifest.run);
  const entry: DeclaredModule = {
    credential: addresses ? { address, addresses, fingerprint, sealed, user: credential.user } : { address, fingerprint, sealed, user: credential.user },
    env: moduleEnvironment(state, module, address, credential.user, fingerprint, prepared.holdersOf),
    ...(logins.length === 0 ? {} : { logins }),
    module,
    provisions: received.length < 2 ? received : received.sort(byReceived),
    run: run ?? manifest.run,
    version: manifest.version,
  };
  return { kind: "entry", entry, ordered: run !== undefined, grants };
}

/**
 * Composes the user list and every enrolled node's declaration in one pass (sorted by node),
 * sharing the indexes: linear in the records. `reports` (R73): each node's last report that
 * decides an overlap (compose/overlap.ts; without them every overlap holds). Pure; the shell
 * sends the results.
 */
export function composeDeclarations(
  state: State,
  config: ComposeConfig,
  digest: Digest,
  reports?: OverlapReports,
): { users: BusUsers; declarations: DeclarationResult[] } {
  const prepared = prepareComposition(state, config, reports);
  const declarations = nodeNames(state.nodes).map((node) => composeDeclaration(state, node, config, digest, prepared));
  return { users: prepared.busUsers(), declarations };
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

// The orders of a declaration's provisions, declared once: a comparator written in place was a
// closure made (and named) for every node and module entry.
/** Grants by seat, provision, consumer (as `seat/provision/consumer` compares). */
function byGrant(a: ProvisionGrant, b: ProvisionGrant): number {
  return compare(`${a.seat}/${a.provision}/${a.consumer}`, `${b.seat}/${b.provision}/${b.consumer}`);
}

/** Received provisions by seat, provision (as `seat/provision` compares). */
function byReceived(a: ReceivedProvision, b: ReceivedProvision): number {
  return compare(`${a.seat}/${a.provision}`, `${b.seat}/${b.provision}`);
}
