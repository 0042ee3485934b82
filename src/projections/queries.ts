import type { State } from "./state.ts";
import { claimantsOf, resolveSeat } from "./modules.ts";
import { modulesOnNode, nodesOfModule } from "./assignments.ts";
import { credentialAt, principalOfModule } from "./credentials.ts";
import { overlayNameOf } from "./overlay.ts";
import { lastSent } from "./sent.ts";
import type { Principal } from "../events/index.ts";
import { provisionsInKeyOrder, type ProvisionRecord } from "./provisions.ts";
import { BROKER_SEAT, CONTROLLER_NAME, principalKey } from "../names.ts";

/**
 * The nodes holding a seat: every node assigned a module that claims it (following aliases, R27).
 * Read from the assignments, which handovers also move, the same way by every lookup (R17).
 * Returns sorted node names; empty when nobody holds the seat.
 */
export function holdersOf(state: State, seat: string): string[] {
  const nodes = new Set<string>();
  for (const module of claimantsOf(state.modules, resolveSeat(state.modules, seat))) {
    for (const node of nodesOfModule(state.assignments, module)) nodes.add(node);
  }
  return [...nodes].sort();
}

/**
 * The records sequence the user list the broker's holders hold was composed from: the oldest of
 * their last sent declarations (a list travels with its holder's declaration); 0 when none was
 * ever sent one. A credential rotated after it (its `rotatedAt`) is on no list sent yet: the next
 * push installs it (R50).
 */
export function lastUserListSequence(state: State): number {
  const sequences = holdersOf(state, BROKER_SEAT).flatMap((node) => {
    const sent = lastSent(state.sent, node);
    return sent ? [sent.recordsSequence] : [];
  });
  return sequences.length === 0 ? 0 : Math.min(...sequences);
}

/** The standard NATS port, used when a genesis address names none (R8). */
export const DEFAULT_BUS_PORT = 4222;

/**
 * Splits `scheme://host[:port]` (or `host[:port]`) into its parts, filling in `defaultPort` when
 * the port is missing (R8). Throws an Error naming the address when it has a user or a path.
 */
export function parseBusAddress(address: string, defaultPort = DEFAULT_BUS_PORT): { scheme: string; host: string; port: number } {
  const match = /^(?:([a-z]+):\/\/)?([^:/@\s]+|\[[0-9a-fA-F:]+\])(?::(\d{1,5}))?\/?$/.exec(address);
  if (!match) throw new Error(`bus address "${address.replace(/\/\/[^@/]*@/, "//")}" is not scheme://host[:port]`);
  return { scheme: match[1] ?? "tls", host: match[2]!, port: match[3] ? Number(match[3]) : defaultPort };
}

/** `scheme://host:port`, the form every credential carries (R3: never a user or password inside). */
export function formatBusAddress(parts: { scheme: string; host: string; port: number }): string {
  return `${parts.scheme}://${parts.host}:${parts.port}`;
}

/**
 * The node whose overlay name is the broker's address: the holder of `mesh-broker` (the first,
 * sorted, when several hold it); while nothing holds it (genesis) the hub stands in (R6).
 * Null when neither exists.
 */
export function brokerNode(state: State): string | null {
  return holdersOf(state, BROKER_SEAT)[0] ?? state.overlay.hub;
}

/**
 * The broker's address as `node` can reach it (R7): a node on the overlay (per whereEveryoneIs)
 * gets the broker node's overlay name, when that node is on the overlay too; the broker node itself
 * and any node off the overlay get the genesis address (the bus listens there on the broker's own
 * machine, and on a one-machine mesh no resolver knows `<node>.internal`). The port is the genesis
 * address's, or the standard one (R8). `broker` is brokerNode(state), passed by a caller that
 * resolves many nodes against one state (finding it scans the modules). Throws when the mesh has
 * no genesis record.
 */
export function brokerReachableAt(state: State, node: string, broker: string | null = brokerNode(state)): string {
  if (!state.mesh) throw new Error("the mesh has no genesis record (MeshCreated): run the installer first");
  const genesis = parseBusAddress(state.mesh.genesisAddress);
  const brokerName = broker === null ? undefined : overlayNameOf(state.overlay, broker);
  if (node !== broker && overlayNameOf(state.overlay, node) !== undefined && brokerName !== undefined) {
    return formatBusAddress({ ...genesis, host: brokerName });
  }
  return formatBusAddress(genesis);
}

/**
 * The servers a credential whose address is `address` dials (issue 14, R62): on a cluster
 * (MeshCreated.addresses) a credential pointing at one of its servers lists every server, `address`
 * first; any other address (an overlay name, R7) and a one-server mesh list nothing more
 * (undefined: the credential carries `address` alone). Pure.
 */
export function busAddressesOf(state: State, address: string): string[] | undefined {
  const servers = state.mesh?.addresses;
  if (!servers || servers.length < 2) return undefined;
  const formatted = servers.map((one) => formatBusAddress(parseBusAddress(one)));
  if (!formatted.includes(address)) return undefined;
  return [address, ...formatted.filter((one) => one !== address)];
}

/**
 * Every principal whose current credential may be on `node`'s disk (R48), sorted by principal key:
 * the credentials of the modules assigned there now (the controller's own for `mesh-controller`)
 * and every credential whose `deliveredTo` names the node (a module that ran there since its
 * credential was minted). The node's own credential is not listed: removing the node ends it.
 * Only principals that have a credential are listed. O(what the node holds): read from the
 * assignments' and the credentials' indexes by node.
 */
export function credentialsDeliveredTo(state: State, node: string): Principal[] {
  const found = new Map<string, Principal>();
  for (const module of modulesOnNode(state.assignments, node)) {
    const principal = principalOfModule(module);
    const key = principalKey(principal.kind, principal.name);
    if (credentialAt(state.credentials, key)) found.set(key, principal);
  }
  for (const key of state.credentials.deliveredAt(node)) found.set(key, credentialAt(state.credentials, key)!.principal);
  return [...found.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, principal]) => principal);
}

/**
 * Every minted provision whose secret may be on `node`'s disk (R48), sorted by its key: the
 * provisions its consumer receives there now (the consumer module is assigned to the node), the
 * ones the node grants (it holds the provision's seat), and every one whose `deliveredTo` names
 * the node (its consumer or a provider ran there since the secret was minted).
 * O(provisions × holders).
 */
export function provisionsDeliveredTo(state: State, node: string): ProvisionRecord[] {
  const found: ProvisionRecord[] = [];
  for (const record of provisionsInKeyOrder(state.provisions)) {
    if (nodesOfModule(state.assignments, record.consumer).includes(node)
      || record.deliveredTo?.includes(node)
      || holdersOf(state, record.seat).includes(node)) found.push(record);
  }
  return found;
}

/** The controller's own principal (`controller mesh-controller`). */
export const CONTROLLER_PRINCIPAL: Principal = { kind: "controller", name: CONTROLLER_NAME };
