import { z } from "zod";
import { EventMeta } from "./meta.ts";
import { MeshName } from "../manifest/manifest.ts";

/** A provision's fields, as minted and as rotated (ProvisionRotated). */
export const ProvisionFields = {
  /** The seat whose holder grants the provision, and the provision's name (may equal the seat's, R26). */
  seat: MeshName,
  provision: MeshName,
  /** The module that uses the seat and receives the provision. */
  consumer: MeshName,
  /** The login the provider creates for the consumer: its user and the secret sealed with the mesh key. */
  user: z.string().min(1),
  sealed: z.string().min(1),
};

/** Something a seat's holder grants a module that uses the seat was minted into the records. */
export const ProvisionMinted = EventMeta.extend({ type: z.literal("ProvisionMinted"), ...ProvisionFields }).strict();
export type ProvisionMinted = z.infer<typeof ProvisionMinted>;
