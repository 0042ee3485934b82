import type { MeshEvent } from "../events/index.ts";
import { assertNever } from "./assertNever.ts";
import { moduleOf, resolveSeat, type ModulesState } from "./modules.ts";
import { emptyBuckets, entriesIn, getIn, setIn, valuesIn, type Buckets, type Owned } from "./buckets.ts";
import { sortedHas, withInserted } from "./sorted.ts";

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
/** Minted provisions by key `<seat>/<provision>/<consumer>`, a bucketed map (buckets.ts): read it with provisionOf and everyProvision. */
export type ProvisionsState = Buckets<ProvisionRecord>;

export const initialProvisions: ProvisionsState = emptyBuckets();

/** The key a provision is filed under. */
export function provisionKey(seat: string, provision: string, consumer: string): string {
  return `${seat}/${provision}/${consumer}`;
}

/**
 * Fold of minted and rotated provisions: the provisions after `event` (`owned`: see buckets.ts
 * setIn; records are replaced, never changed). `sequence` is the records sequence of the commit the
 * event is in (kept as `rotatedAt` by a rotation). `modules` (the catalogue as folded so far) says
 * which seats a module unassigned from a node claims: that node keeps in its disk the provisions
 * the module received (as their consumer) or granted (as a provider of their seat), so it joins
 * their `deliveredTo` (R48). A removed node leaves every `deliveredTo`: the removal's own commit
 * rotates what was delivered to it.
 */
export function evolveProvisions(provisions: ProvisionsState, event: MeshEvent, owned: Owned, sequence = 0, modules?: ModulesState): ProvisionsState {
  switch (event.type) {
    case "ProvisionMinted":
    case "ProvisionRotated":
      return setIn(provisions, provisionKey(event.seat, event.provision, event.consumer), {
        seat: event.seat,
        provision: event.provision,
        consumer: event.consumer,
        user: event.user,
        sealed: event.sealed,
        mintedAt: event.at,
        ...(event.type === "ProvisionRotated" ? { rotatedAt: sequence } : {}),
      }, owned);
    case "ModuleUnassigned": {
      const manifest = modules === undefined ? undefined : moduleOf(modules, event.module)?.manifest;
      const claimed = new Set((manifest?.claims ?? []).map((claim) => resolveSeat(modules!, claim)));
      let after = provisions;
      for (const [key, record] of entriesIn(provisions)) {
        if (record.consumer !== event.module && !claimed.has(record.seat)) continue;
        const deliveredTo = withInserted(record.deliveredTo, event.node, owned);
        if (deliveredTo !== undefined) after = setIn(after, key, { ...record, deliveredTo }, owned);
      }
      return after;
    }
    case "NodeRemoved": {
      let after = provisions;
      for (const [key, record] of entriesIn(provisions)) {
        if (record.deliveredTo === undefined || !sortedHas(record.deliveredTo, event.node)) continue;
        const { deliveredTo, ...rest } = record;
        const left = deliveredTo.filter((n) => n !== event.node);
        after = setIn(after, key, left.length === 0 ? rest : { ...rest, deliveredTo: left }, owned);
      }
      return after;
    }
    case "MeshCreated": case "NodeEnrolled": case "CredentialMinted":
    case "CredentialRotated": case "CredentialRevoked": case "ModuleRegistered": case "ModuleIssued": case "ModuleRetired":
    case "ModuleAssigned": case "SeatAliased": case "SeatHandedOver":
    case "OverlayPlaced": case "DeclarationSent":
    case "CommitVoided": case "RecordsRestored":
      return provisions;
    default:
      return assertNever(event);
  }
}

/** The provision minted for `consumer` of `provision` at `seat`, or undefined. */
export function provisionOf(state: ProvisionsState, seat: string, provision: string, consumer: string): ProvisionRecord | undefined {
  return getIn(state, provisionKey(seat, provision, consumer));
}

/** Every minted provision, in no particular order (sort where the order shows). */
export function everyProvision(state: ProvisionsState): ProvisionRecord[] {
  return valuesIn(state);
}

/** Every minted provision, sorted by its key (provisionKey): the order rotations and R48's lists take. */
export function provisionsInKeyOrder(state: ProvisionsState): ProvisionRecord[] {
  return entriesIn(state).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, record]) => record);
}
