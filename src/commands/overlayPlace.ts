import { OverlayPlaceRequest, type BodyOf, type StaleCredential } from "../contracts/verbs.ts";
import type { MeshEvent } from "../events/index.ts";
import { everyCredential, isEnrolled, overlayNameOf, type State } from "../projections/index.ts";
import { overlayName } from "../names.ts";
import { command, metaOf, refuse, unchanged, type Decision, type Envelope } from "./envelope.ts";
import { addressResolver } from "./shared.ts";

/**
 * Refusals, in order: `unknown-node` (not enrolled); `hub-exists` when asked for a hub and the
 * overlay has another, naming it (R9). A node on the overlay placed again, where that changes
 * nothing, is accepted `unchanged` (no events): without --hub, or as the hub it already is
 * (placing a placed node again as the hub, while there is none, promotes it).
 * Success: OverlayPlaced {node, hub, overlayName: `<node>.internal`} about `node/<node>`.
 */
export function decide(state: State, command: OverlayPlaceRequest, envelope: Envelope): Decision {
  if (!isEnrolled(state.nodes, command.node)) {
    return refuse("unknown-node", `no node "${command.node}" is enrolled: run \`mesh node enrol\` first`, "node");
  }
  const hub = command.hub === true;
  const entity = { kind: "node", id: command.node };
  const placedAs = overlayNameOf(state.overlay, command.node);
  if (placedAs !== undefined && (!hub || state.overlay.hub === command.node)) return unchanged(entity);
  if (hub && state.overlay.hub !== null) {
    return refuse("hub-exists", `the overlay already has a hub: node "${state.overlay.hub}"; place "${command.node}" without --hub`, "hub");
  }
  return {
    ok: true,
    entity,
    events: [{ ...metaOf(envelope), type: "OverlayPlaced", node: command.node, hub, overlayName: overlayName(command.node) }],
  };
}

/** What `overlay.place` answers (R10): the placement, and which recorded addresses differ from the ones now. */
export type OverlayPlaceReply = BodyOf<"overlay.place">;
export type { StaleCredential };

/**
 * The placement, and R10 said out loud: a module's credential follows the placement at the next
 * push (a declaration carries the address its node reaches the broker at when it is composed, not
 * the recorded one); a node's own credential keeps the address its host was given, and the
 * controller's, an operator's or a builder's the one it was minted for, until `mesh credential
 * rotate`. `staleCredentials` lists each credential whose recorded address differs from the one its
 * principal would get now. Addresses only, never a secret (R3).
 */
export function reply(state: State, _events: readonly MeshEvent[], _tools: unknown, _entity: unknown, command: OverlayPlaceRequest): OverlayPlaceReply {
  const placedAs = overlayNameOf(state.overlay, command.node);
  if (placedAs === undefined) throw new Error(`overlay.place reply: node "${command.node}" is not on the overlay after the commit`);
  const placed = { node: command.node, overlayName: placedAs, hub: state.overlay.hub === command.node };
  const staleCredentials: StaleCredential[] = [];
  if (state.mesh) {
    const addressFor = addressResolver(state);
    for (const credential of everyCredential(state.credentials)) {
      const addressNow = addressFor(credential.principal);
      if (addressNow !== credential.address) {
        staleCredentials.push({ principal: credential.principal, user: credential.user, address: credential.address, addressNow });
      }
    }
  }
  return {
    node: placed.node,
    overlayName: placed.overlayName,
    hub: placed.hub,
    note: "modules dial the address of the state at each push, so theirs move at the next push; other credentials issued earlier keep their old address until `mesh credential rotate`",
    staleCredentials,
  };
}

export const overlayPlace = command("overlay.place", {
  secretsNeeded: () => 0,
  decide,
  reply,
  bounded: [{ field: "staleCredentials", see: "`mesh credentials` (each credential's recorded address) and `mesh where` (where each node is now)" }],
});
