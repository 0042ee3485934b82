import type { Draft } from "immer";
import type { MeshEvent } from "../events/index.ts";
import { assertNever } from "./assertNever.ts";

export type ProvisionRecord = { seat: string; provision: string; consumer: string; user: string; sealed: string; mintedAt: string };
/** Minted provisions by key `<seat>/<provision>/<consumer>`. */
export type ProvisionsState = Record<string, ProvisionRecord>;

export const initialProvisions: ProvisionsState = {};

/** The key a provision is filed under. */
export function provisionKey(seat: string, provision: string, consumer: string): string {
  return `${seat}/${provision}/${consumer}`;
}

/** Fold of minted provisions. */
export function evolveProvisions(draft: Draft<ProvisionsState>, event: MeshEvent): void {
  switch (event.type) {
    case "ProvisionMinted":
      draft[provisionKey(event.seat, event.provision, event.consumer)] = {
        seat: event.seat,
        provision: event.provision,
        consumer: event.consumer,
        user: event.user,
        sealed: event.sealed,
        mintedAt: event.at,
      };
      return;
    case "MeshCreated": case "NodeEnrolled": case "NodeRemoved": case "CredentialMinted":
    case "CredentialRotated": case "CredentialRevoked": case "ModuleRegistered": case "ModuleIssued":
    case "ModuleAssigned": case "ModuleUnassigned": case "SeatAliased": case "SeatHandedOver":
    case "OverlayPlaced": case "DeclarationSent":
    case "CommitVoided": case "RecordsRestored":
      return;
    default:
      assertNever(event);
  }
}
