import { moduleOf, resolveSeat } from "./modules.ts";
import { DeliveredMap, forgetDeliveries } from "./deliveredMap.ts";
import { forEachPlain, withInserted, type EventOf, type SliceFold } from "./slice.ts";

export type ProvisionRecord = {
  seat: string;
  provision: string;
  consumer: string;
  user: string;
  sealed: string;
  mintedAt: string;
  /**
   * The records sequence of the ProvisionRotated that made this secret, absent for one as first
   * minted. The push compares it with what each node was last sent to say which provisions it
   * delivers fresh.
   */
  rotatedAt?: number;
  /**
   * Nodes this very secret may have been delivered to that no longer run its consumer or a
   * provider (sorted): a module unassigned or handed over since the secret was minted. With the
   * nodes running them now (provisionsDeliveredTo) this is every node whose disk may hold it
   * (R48). A new secret starts with none.
   */
  deliveredTo?: string[];
};
/** Minted provisions by key `<seat>/<provision>/<consumer>`: read it with provisionOf and everyProvision. */
export type ProvisionsState = DeliveredMap<ProvisionRecord>;

/** The key a provision is filed under. */
export function provisionKey(seat: string, provision: string, consumer: string): string {
  return `${seat}/${provision}/${consumer}`;
}

/** A minted or rotated provision's record (`sequence`: the records sequence of its commit, kept as `rotatedAt` by a rotation). */
function minted(event: EventOf<"ProvisionMinted"> | EventOf<"ProvisionRotated">, sequence: number): ProvisionRecord {
  return {
    seat: event.seat,
    provision: event.provision,
    consumer: event.consumer,
    user: event.user,
    sealed: event.sealed,
    mintedAt: event.at,
    ...(event.type === "ProvisionRotated" ? { rotatedAt: sequence } : {}),
  };
}

/**
 * Fold of minted and rotated provisions (a new secret starts with no `deliveredTo`). A module
 * unassigned from a node leaves in that node's disk the provisions it received (as their consumer)
 * or granted (as a provider of a seat it claims, read from the catalogue as folded so far), so the
 * node joins their `deliveredTo` (R48). A removed node leaves every `deliveredTo`: the removal's
 * own commit rotates what was delivered to it.
 */
export const provisionsFold: SliceFold<ProvisionsState> = {
  ProvisionMinted: (provisions, event, { sequence }) => {
    provisions.set(provisionKey(event.seat, event.provision, event.consumer), minted(event, sequence));
  },
  ProvisionRotated: (provisions, event, { sequence }) => {
    provisions.set(provisionKey(event.seat, event.provision, event.consumer), minted(event, sequence));
  },
  ModuleUnassigned: (provisions, event, { slices }) => {
    const manifest = moduleOf(slices.modules, event.module)?.manifest;
    const claimed = new Set((manifest?.claims ?? []).map((claim) => resolveSeat(slices.modules, claim)));
    forEachPlain(provisions, (key, record) => {
      if (record.consumer !== event.module && !claimed.has(record.seat)) return;
      const deliveredTo = withInserted(record.deliveredTo, event.node);
      if (deliveredTo !== undefined) provisions.set(key, { ...record, deliveredTo });
    });
  },
  NodeRemoved: (provisions, event) => {
    forgetDeliveries(provisions, event.node);
  },
};

/** The provision minted for `consumer` of `provision` at `seat`, or undefined. */
export function provisionOf(state: ProvisionsState, seat: string, provision: string, consumer: string): ProvisionRecord | undefined {
  return state.get(provisionKey(seat, provision, consumer));
}

/** Every minted provision, in no particular order (sort where the order shows). */
export function everyProvision(state: ProvisionsState): ProvisionRecord[] {
  return [...state.values()];
}

/** Every minted provision, sorted by its key (provisionKey): the order rotations and R48's lists take. */
export function provisionsInKeyOrder(state: ProvisionsState): ProvisionRecord[] {
  return [...state.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, record]) => record);
}
