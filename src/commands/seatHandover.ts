import { SeatHandoverRequest, type BodyOf } from "../contracts/verbs.ts";
import type { Entity, MeshEvent } from "../events/index.ts";
import { claimantsOf, declaredSeat, holdersOf, isEnrolled, nodesOfModule, resolveSeat, type State } from "../projections/index.ts";
import { command, metaOf, refuse, unchanged, type Decision, type Envelope } from "./envelope.ts";
import { refuseLosingBroker } from "./shared.ts";

/**
 * Refusals, in order: `unknown-seat` (no such seat after aliases), `unknown-node` (`to` is not
 * enrolled), `not-holder` (`from` does not hold the seat, per holdersOf), `already-holder` (`to`
 * holds it already, and so does `from`). A handover already made (`to` holds it, `from` does not)
 * is accepted `unchanged` (no events): the effect holds. Success, ONE commit about `seat/<seat>`: for each module on `from` that
 * claims the seat, ModuleUnassigned(module, from) then ModuleAssigned(module, to); then
 * SeatHandedOver(seat, from, to). Holders are therefore read from the assignments alone (R17).
 * Moving a module moves every seat it claims: the reply lists the modules moved. A commit that would
 * leave mesh-broker with no holder is refused `last-broker-holder` (R49).
 */
export function decide(state: State, command: SeatHandoverRequest, envelope: Envelope): Decision {
  const seat = resolveSeat(state.modules, command.seat);
  if (!declaredSeat(state.modules, seat)) {
    return refuse("unknown-seat", `there is no seat "${command.seat}": see \`mesh seats\``, "seat");
  }
  if (!isEnrolled(state.nodes, command.to)) {
    return refuse("unknown-node", `no node "${command.to}" is enrolled: run \`mesh node enrol\` first`, "to");
  }
  const holders = holdersOf(state, seat);
  const entity = { kind: "seat", id: seat };
  if (holders.includes(command.to) && !holders.includes(command.from)) return unchanged(entity);
  if (!holders.includes(command.from)) {
    const now = holders.length === 0 ? "nobody holds it" : `it is held by ${holders.join(", ")}`;
    return refuse("not-holder", `node "${command.from}" does not hold seat "${seat}": ${now}`, "from");
  }
  if (holders.includes(command.to)) {
    return refuse("already-holder", `node "${command.to}" already holds seat "${seat}"`, "to");
  }
  const meta = metaOf(envelope);
  const moved = claimantsOf(state.modules, seat).filter((m) => nodesOfModule(state.assignments, m).includes(command.from));
  const events: MeshEvent[] = [];
  for (const module of moved) {
    events.push({ ...meta, type: "ModuleUnassigned", module, node: command.from });
    events.push({ ...meta, type: "ModuleAssigned", module, node: command.to });
  }
  events.push({ ...meta, type: "SeatHandedOver", seat, from: command.from, to: command.to });
  // The claimant moves to `to`, so a handover keeps every seat held; checked all the same (R49).
  return refuseLosingBroker(state, entity, events, envelope, "to") ?? { ok: true, entity, events };
}

/** What `seat.handover` answers: the move, the modules moved with it, and the seat's holders now. */
export type SeatHandoverReply = BodyOf<"seat.handover">;

export function reply(state: State, events: readonly MeshEvent[], _tools: unknown, entity: Entity, command: SeatHandoverRequest): SeatHandoverReply {
  const modulesMoved = events.flatMap((e) => (e.type === "ModuleAssigned" ? [e.module] : []));
  return { seat: entity.id, from: command.from, to: command.to, modulesMoved, holders: holdersOf(state, entity.id) };
}

export const seatHandover = command("seat.handover", {
  secretsNeeded: () => 0,
  decide,
  reply,
});
