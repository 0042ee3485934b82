import type { Draft } from "immer";
import type { MeshEvent } from "../events/index.ts";
import { assertNever } from "./assertNever.ts";
import { resolveSeat, type ModulesState } from "./modules.ts";

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
/** Minted provisions by key `<seat>/<provision>/<consumer>`. */
export type ProvisionsState = Record<string, ProvisionRecord>;

export const initialProvisions: ProvisionsState = {};

/** The key a provision is filed under. */
export function provisionKey(seat: string, provision: string, consumer: string): string {
  return `${seat}/${provision}/${consumer}`;
}

/**
 * Fold of minted and rotated provisions. `sequence` is the records sequence of the commit the
 * event is in (kept as `rotatedAt` by a rotation). `modules` (the catalogue as folded so far)
 * says which seats a module unassigned from a node claims: that node keeps in its disk the
 * provisions the module received (as their consumer) or granted (as a provider of their seat),
 * so it joins their `deliveredTo` (R48). A removed node leaves every `deliveredTo`: the removal's
 * own commit rotates what was delivered to it.
 */
export function evolveProvisions(draft: Draft<ProvisionsState>, event: MeshEvent, sequence = 0, modules?: ModulesState): void {
  switch (event.type) {
    case "ProvisionMinted":
    case "ProvisionRotated":
      draft[provisionKey(event.seat, event.provision, event.consumer)] = {
        seat: event.seat,
        provision: event.provision,
        consumer: event.consumer,
        user: event.user,
        sealed: event.sealed,
        mintedAt: event.at,
        ...(event.type === "ProvisionRotated" ? { rotatedAt: sequence } : {}),
      };
      return;
    case "ModuleUnassigned": {
      const manifest = modules?.modules[event.module]?.manifest;
      const claimed = new Set((manifest?.claims ?? []).map((claim) => resolveSeat(modules!, claim)));
      for (const key in draft) {
        const record = draft[key]!;
        if (record.consumer !== event.module && !claimed.has(record.seat)) continue;
        if (!(record.deliveredTo ?? []).includes(event.node)) record.deliveredTo = [...(record.deliveredTo ?? []), event.node].sort();
      }
      return;
    }
    case "NodeRemoved":
      for (const key in draft) {
        const record = draft[key]!;
        if (record.deliveredTo === undefined || !record.deliveredTo.includes(event.node)) continue;
        const left = record.deliveredTo.filter((n) => n !== event.node);
        if (left.length === 0) delete record.deliveredTo;
        else record.deliveredTo = left;
      }
      return;
    case "MeshCreated": case "NodeEnrolled": case "CredentialMinted":
    case "CredentialRotated": case "CredentialRevoked": case "ModuleRegistered": case "ModuleIssued":
    case "ModuleAssigned": case "SeatAliased": case "SeatHandedOver":
    case "OverlayPlaced": case "DeclarationSent":
    case "CommitVoided": case "RecordsRestored":
      return;
    default:
      assertNever(event);
  }
}
