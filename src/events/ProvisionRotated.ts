import { z } from "zod";
import { EventMeta } from "./meta.ts";
import { MeshName } from "../manifest/manifest.ts";

/**
 * A minted provision's secret was replaced by a new one (R44, R48): the copies delivered before it
 * (to the consumer's nodes and the seat holders' nodes) no longer match what the provider grants
 * from the next push on. Same fields as ProvisionMinted.
 */
export const ProvisionRotated = EventMeta.extend({
  type: z.literal("ProvisionRotated"),
  /** The seat whose holder grants the provision, and the provision's name (may equal the seat's, R26). */
  seat: MeshName,
  provision: MeshName,
  /** The module that uses the seat and receives the provision. */
  consumer: MeshName,
  /** The login the provider creates for the consumer: its user and the new secret sealed with the mesh key. */
  user: z.string().min(1),
  sealed: z.string().min(1),
}).strict();
export type ProvisionRotated = z.infer<typeof ProvisionRotated>;
