import type { MeshEvent } from "../events/index.ts";
import { assertNever } from "./assertNever.ts";
import { deleteIn, emptyBuckets, getIn, setIn, type Buckets, type Owned } from "./buckets.ts";

export type SentRecord = { digest: string; recordsSequence: number; at: string };
/**
 * What each node was last sent (R31: a node is behind when its composed digest differs), a
 * bucketed map by node name (buckets.ts): a push records one DeclarationSent per node, and a
 * commit must not copy every node's record. Read it with lastSent.
 */
export type SentState = Buckets<SentRecord>;

export const initialSent: SentState = emptyBuckets();

/** Fold of `DeclarationSent`: what was sent after `event` (`owned`: see buckets.ts setIn). A removed node's record goes with it. */
export function evolveSent(sent: SentState, event: MeshEvent, owned: Owned): SentState {
  switch (event.type) {
    case "DeclarationSent":
      return setIn(sent, event.node, { digest: event.digest, recordsSequence: event.recordsSequence, at: event.at }, owned);
    case "NodeRemoved":
      return deleteIn(sent, event.node, owned);
    case "MeshCreated": case "NodeEnrolled": case "CredentialMinted": case "CredentialRotated":
    case "CredentialRevoked": case "ModuleRegistered": case "ModuleIssued": case "ModuleRetired": case "ModuleAssigned":
    case "ModuleUnassigned": case "SeatAliased": case "SeatHandedOver": case "OverlayPlaced":
    case "ProvisionMinted": case "ProvisionRotated":
    case "CommitVoided": case "RecordsRestored":
      return sent;
    default:
      return assertNever(event);
  }
}

/** What a node was last sent, or undefined when it was never sent anything. */
export function lastSent(state: SentState, node: string): SentRecord | undefined {
  return getIn(state, node);
}
