import type { Draft } from "immer";
import type { MeshEvent, Principal } from "../events/index.ts";
import { principalKey } from "../names.ts";
import { assertNever } from "./assertNever.ts";

/** A principal's current credential as the records hold it (never the password in the clear). */
export type CredentialRecord = {
  principal: Principal;
  user: string;
  hash: string;
  sealed: string;
  address: string;
  mintedAt: string;
};
/** Current credentials by principal key (`<kind>:<name>`). */
export type CredentialsState = Record<string, CredentialRecord>;

export const initialCredentials: CredentialsState = {};

/** Fold of minting, rotation and revocation. A removed node's credential goes with it. */
export function evolveCredentials(draft: Draft<CredentialsState>, event: MeshEvent): void {
  switch (event.type) {
    case "CredentialMinted":
    case "CredentialRotated":
      draft[principalKey(event.principal.kind, event.principal.name)] = {
        principal: event.principal,
        user: event.user,
        hash: event.hash,
        sealed: event.sealed,
        address: event.address,
        mintedAt: event.at,
      };
      return;
    case "CredentialRevoked":
      delete draft[principalKey(event.principal.kind, event.principal.name)];
      return;
    case "NodeRemoved":
      delete draft[principalKey("node", event.node)];
      return;
    case "MeshCreated": case "NodeEnrolled": case "ModuleRegistered": case "ModuleIssued":
    case "ModuleAssigned": case "ModuleUnassigned": case "SeatAliased": case "SeatHandedOver":
    case "OverlayPlaced": case "ProvisionMinted": case "DeclarationSent":
    case "CommitVoided": case "RecordsRestored":
      return;
    default:
      assertNever(event);
  }
}

/** The current credential of a principal, or undefined when it has none. */
export function credentialOf(state: CredentialsState, principal: Principal): CredentialRecord | undefined {
  return state[principalKey(principal.kind, principal.name)];
}
