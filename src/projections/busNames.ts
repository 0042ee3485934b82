import type { State } from "./state.ts";
import { overlayNameOf } from "./overlay.ts";
import { brokerNode, holdersOf, parseBusAddress } from "./queries.ts";
import { BROKER_SEAT } from "../names.ts";

/** The names every bus certificate carries: the bus's own machine dials it on loopback (R71). */
export const LOOPBACK_NAMES: readonly string[] = ["localhost", "127.0.0.1", "::1"];

/**
 * Every name the bus's certificate must carry (R71): each host any principal is told to dial.
 * That is the genesis address's host, each cluster server's host (MeshCreated.addresses), the
 * names genesis was given (`--name`), the overlay name of every holder of mesh-broker and of the
 * node standing in for it (brokerNode: the hub while nothing holds it, R6), and loopback. Host
 * names are lower-cased (DNS is case-blind), IPv6 brackets dropped; sorted, each once. Pure.
 * Throws when the records have no genesis (MeshCreated).
 */
export function busCertificateNames(state: State): string[] {
  const mesh = state.mesh;
  if (!mesh) throw new Error("the mesh has no genesis record (MeshCreated): run the installer first");
  const hosts = [mesh.genesisAddress, ...(mesh.addresses ?? [])].map((address) => parseBusAddress(address).host);
  const broker = brokerNode(state);
  const brokerNodes = broker === null ? holdersOf(state, BROKER_SEAT) : [broker, ...holdersOf(state, BROKER_SEAT)];
  const overlay = brokerNodes.flatMap((node) => overlayNameOf(state.overlay, node) ?? []);
  return certificateNames([...hosts, ...(mesh.names ?? []), ...overlay, ...LOOPBACK_NAMES]);
}

/** Whether `name` is an IP address (v4 dotted quad, or v6: it has a colon) rather than a host name. Pure. */
export function isAddressName(name: string): boolean {
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(name) || name.includes(":");
}

/** An IPv6 address in its one short form (`0:0:0:0:0:0:0:1` → `::1`, lower-case), as WHATWG URLs write it; anything else lower-cased. */
function canonicalName(name: string): string {
  if (!name.includes(":")) return name.toLowerCase();
  try {
    return new URL(`http://[${name}]/`).hostname.slice(1, -1);
  } catch {
    return name.toLowerCase();
  }
}

/**
 * `names` normalised for a certificate: brackets off IPv6 and each in its short form, host names
 * lower-cased, empties dropped; sorted, each once. Pure.
 */
export function certificateNames(names: readonly string[]): string[] {
  const normal = names
    .map((name) => name.trim().replace(/^\[(.*)\]$/, "$1"))
    .filter((name) => name.length > 0)
    .map(canonicalName);
  return [...new Set(normal)].sort();
}

/** Whether two name sets (as busCertificateNames returns them) differ: the push then issues a new certificate (R71). Pure. */
export function namesDiffer(a: readonly string[], b: readonly string[]): boolean {
  const left = certificateNames(a);
  const right = certificateNames(b);
  return left.length !== right.length || left.some((name, i) => name !== right[i]);
}
