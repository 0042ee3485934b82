import type { State } from "../projections/index.ts";
import { brokerReachableAt, busAddressesOf, credentialOf, holdersOf, principalOfModule, provisionKey, resolveSeat, seatOf } from "../projections/index.ts";
import { BROKER_SEAT } from "../names.ts";
import { CONTRACT_VERSIONS } from "../contracts/version.ts";
import {
  type Declaration, type DeclarationBody, type DeclaredModule, type DeclaredCredential, type NodeSelf, type ProvisionGrant, type ReceivedProvision,
} from "../contracts/declaration.ts";
import { USER_LIST_PART_BYTES, type UserListRef } from "../contracts/userList.ts";
import { canonicalJson, type Digest } from "./digest.ts";
import { moduleEnvironment } from "./environment.ts";
import { composeBusUsers, renderUserList } from "./userList.ts";
import type { BusUsers, ComposeConfig, Principal, Refusal } from "./types.ts";

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

/** The number of bytes `text` takes in UTF-8 (a lone surrogate counts as U+FFFD, 3 bytes). Pure. */
export function utf8Length(text: string): number {
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
 * linear in the records (not nodes × modules): modules by node, the users of each seat, the broker
 * holders, and the user list (composed on first need).
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
};

/** Builds the shared indexes of one composition (see Prepared). O(records). */
export function prepareComposition(state: State, config: ComposeConfig): Prepared {
  const modulesByNode = new Map<string, string[]>();
  const usersOfSeat = new Map<string, string[]>();
  const seen = new Set<string>();
  for (const module of Object.keys(state.assignments.byModule).sort()) {
    const nodes = state.assignments.byModule[module]!;
    if (nodes.length === 0) continue;
    for (const node of nodes) {
      const list = modulesByNode.get(node);
      if (list) list.push(module);
      else modulesByNode.set(node, [module]);
    }
    for (const use of state.modules.modules[module]?.manifest.uses ?? []) {
      const seat = resolveSeat(state.modules, use);
      if (seen.has(`${seat}/${module}`)) continue;
      seen.add(`${seat}/${module}`);
      const list = usersOfSeat.get(seat);
      if (list) list.push(module);
      else usersOfSeat.set(seat, [module]);
    }
  }
  let users: BusUsers | undefined;
  let text: string | null | undefined;
  const busUsers = (): BusUsers => (users ??= composeBusUsers(state, config));
  const userListText = (): string | null => {
    if (text === undefined) {
      const list = busUsers();
      text = list.ok ? renderUserList(list) : null;
    }
    return text;
  };
  let ref: UserListRef | undefined;
  const userListRef = (digest: Digest): UserListRef => {
    if (ref) return ref;
    const listed = userListText();
    if (listed === null) throw new Error("userListRef: the user list has no users (ask userListText first)");
    const bytes = utf8Length(listed);
    ref = { digest: digest(listed), bytes, parts: userListPartCount(bytes) };
    return ref;
  };
  const holders = holdersOf(state, BROKER_SEAT);
  const broker = holders[0] ?? state.overlay.hub;
  const reachByPlacement = new Map<string, string>();
  const reachableAt = (node: string): string => {
    const placement = node === broker ? "broker" : state.overlay.placed[node] !== undefined ? "placed" : "off";
    let address = reachByPlacement.get(placement);
    if (address === undefined) {
      address = brokerReachableAt(state, node);
      reachByPlacement.set(placement, address);
    }
    return address;
  };
  return { modulesByNode, usersOfSeat, brokerHolders: new Set(holders), busUsers, userListText, userListRef, reachableAt };
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
  if (!state.nodes[node]) return refusal(node, "unknown-node", `node ${node} is not enrolled`);
  const fingerprint = state.mesh.fingerprint;
  const modules: DeclaredModule[] = [];
  const provisions: ProvisionGrant[] = [];
  const modulesLeftOut: ModuleLeftOut[] = [];
  let reachable: string | undefined;
  for (const module of prepared.modulesByNode.get(node) ?? []) {
    const manifest = state.modules.modules[module]?.manifest;
    if (!manifest) return refusal(node, "module-unregistered", `node ${node} is assigned ${module}, which the catalogue does not have`);
    const principal: Principal = principalOfModule(module);
    const credential = credentialOf(state.credentials, principal);
    if (!credential) {
      modulesLeftOut.push({ module, reason: `no credential: run \`mesh module issue ${module}\`, then push` });
      continue;
    }
    if (credential.sealed === undefined) {
      modulesLeftOut.push({ module, reason: `its credential holds no sealed seed: run \`mesh credential rotate ${principal.kind} ${principal.name}\`, then push` });
      continue;
    }
    const sealed = credential.sealed;
    const received: ReceivedProvision[] = [];
    for (const use of manifest.uses) {
      const seat = resolveSeat(state.modules, use);
      const provision = seatOf(state.modules, seat)?.provides;
      if (provision === undefined) continue;
      const record = state.provisions[provisionKey(seat, provision, module)];
      if (!record) return refusal(node, "provision-missing", `the provision ${provision} of ${seat} for ${module} is not minted (push mints it first, R31)`);
      received.push({ seat, provision, user: record.user, sealed: record.sealed });
    }
    for (const claim of manifest.claims) {
      const seat = resolveSeat(state.modules, claim);
      const provision = seatOf(state.modules, seat)?.provides;
      if (provision === undefined) continue;
      for (const consumer of prepared.usersOfSeat.get(seat) ?? []) {
        const record = state.provisions[provisionKey(seat, provision, consumer)];
        if (!record) return refusal(node, "provision-missing", `the provision ${provision} of ${seat} for ${consumer} is not minted (push mints it first, R31)`);
        provisions.push({ seat, provision, consumer, user: record.user, sealed: record.sealed });
      }
    }
    // R10: the address is where this node reaches the broker now, at composition, not the one
    // recorded when the credential was minted: the order of issue, assign and overlay place
    // cannot change what a module dials, and a placement moves it at the next push.
    const address = reachable ??= prepared.reachableAt(node);
    // R62: on a cluster the credential lists every server, so the module reconnects to a survivor.
    const addresses = busAddressesOf(state, address);
    modules.push({
      module,
      version: manifest.version,
      run: manifest.run,
      credential: { address, ...(addresses ? { addresses } : {}), user: credential.user, sealed, fingerprint },
      env: moduleEnvironment(state, module, address, credential.user, fingerprint),
      provisions: received.sort((a, b) => compare(`${a.seat}/${a.provision}`, `${b.seat}/${b.provision}`)),
    });
  }
  provisions.sort((a, b) => compare(`${a.seat}/${a.provision}/${a.consumer}`, `${b.seat}/${b.provision}/${b.consumer}`));
  const own = credentialOf(state.credentials, { kind: "node", name: node });
  // `v` is inside the digest: a declaration of another contract version is another declaration.
  const v = CONTRACT_VERSIONS.declaration;
  // R64: the node's own credential names its public key, no secret (it holds the seed).
  const body: DeclarationBody = own?.nkey !== undefined
    ? { v, node, self: { address: own.address, user: own.user, nkey: own.nkey, fingerprint }, modules, provisions }
    : { v, node, modules, provisions };
  let userListText: string | undefined;
  if (prepared.brokerHolders.has(node)) {
    const text = prepared.userListText();
    if (text === null) {
      const list = prepared.busUsers();
      return { ok: false, node, refusal: list.ok ? { code: "user-list-empty", message: "no user list" } : list.refusal };
    }
    body.userList = prepared.userListRef(digest);
    userListText = text;
  }
  const declaration = { ...body, digest: digest(canonicalJson(body)) };
  return {
    ok: true,
    declaration,
    ...(userListText === undefined ? {} : { userListText }),
    ...(modulesLeftOut.length === 0 ? {} : { modulesLeftOut }),
  };
}

/**
 * Composes the user list and every enrolled node's declaration in one pass (sorted by node),
 * sharing the indexes: linear in the records. Pure; the shell sends the results.
 */
export function composeDeclarations(
  state: State,
  config: ComposeConfig,
  digest: Digest,
): { users: BusUsers; declarations: DeclarationResult[] } {
  const prepared = prepareComposition(state, config);
  const declarations = Object.keys(state.nodes).sort().map((node) => composeDeclaration(state, node, config, digest, prepared));
  return { users: prepared.busUsers(), declarations };
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
