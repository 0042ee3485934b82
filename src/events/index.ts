import { z } from "zod";
import { MeshCreated } from "./MeshCreated.ts";
import { NodeEnrolled } from "./NodeEnrolled.ts";
import { NodeRemoved } from "./NodeRemoved.ts";
import { CredentialMinted } from "./CredentialMinted.ts";
import { CredentialRotated } from "./CredentialRotated.ts";
import { CredentialRevoked } from "./CredentialRevoked.ts";
import { ModuleRegistered } from "./ModuleRegistered.ts";
import { ModuleIssued } from "./ModuleIssued.ts";
import { ModuleAssigned } from "./ModuleAssigned.ts";
import { ModuleUnassigned } from "./ModuleUnassigned.ts";
import { ModuleRetired } from "./ModuleRetired.ts";
import { SeatAliased } from "./SeatAliased.ts";
import { SeatHandedOver } from "./SeatHandedOver.ts";
import { OverlayPlaced } from "./OverlayPlaced.ts";
import { ProvisionMinted } from "./ProvisionMinted.ts";
import { ProvisionRotated } from "./ProvisionRotated.ts";
import { DeclarationSent } from "./DeclarationSent.ts";
import { CommitVoided } from "./CommitVoided.ts";
import { RecordsRestored } from "./RecordsRestored.ts";
import { Entity, EventMeta, Principal, CredentialFields } from "./meta.ts";

/** Every event of the records, discriminated by `type`. Validated when written and when read. */
export const MeshEvent = z.discriminatedUnion("type", [
  MeshCreated,
  NodeEnrolled,
  NodeRemoved,
  CredentialMinted,
  CredentialRotated,
  CredentialRevoked,
  ModuleRegistered,
  ModuleIssued,
  ModuleAssigned,
  ModuleUnassigned,
  ModuleRetired,
  SeatAliased,
  SeatHandedOver,
  OverlayPlaced,
  ProvisionMinted,
  ProvisionRotated,
  DeclarationSent,
  CommitVoided,
  RecordsRestored,
]);
export type MeshEvent = z.infer<typeof MeshEvent>;
export type MeshEventType = MeshEvent["type"];

export { Entity };

/**
 * A commit: the events one command decided, about one entity, as one message on the CATALOGUE
 * stream. Its command id is also the message's `Nats-Msg-Id`.
 */
export const Commit = z
  .object({
    commandId: z.string().min(1),
    entity: Entity,
    events: z.array(MeshEvent).min(1),
    /** The request this commit answered: its verb and the digest of its arguments (R53; absent on older commits). */
    request: z.object({ verb: z.string().min(1), digest: z.string().min(1) }).strict().optional(),
  })
  .strict();
export type Commit = z.infer<typeof Commit>;

export {
  MeshCreated,
  NodeEnrolled,
  NodeRemoved,
  CredentialMinted,
  CredentialRotated,
  CredentialRevoked,
  ModuleRegistered,
  ModuleIssued,
  ModuleAssigned,
  ModuleUnassigned,
  ModuleRetired,
  SeatAliased,
  SeatHandedOver,
  OverlayPlaced,
  ProvisionMinted,
  ProvisionRotated,
  DeclarationSent,
  CommitVoided,
  RecordsRestored,
  EventMeta,
  Principal,
  CredentialFields,
};
