import { z } from "zod";
import { EventMeta } from "./meta.ts";
import { ProvisionFields } from "./ProvisionMinted.ts";

/**
 * A minted provision's secret was replaced by a new one (R44, R48): the copies delivered before it
 * (to the consumer's nodes and the seat holders' nodes) no longer match what the provider grants
 * from the next push on. Same fields as ProvisionMinted; `sealed` is the new secret.
 */
export const ProvisionRotated = EventMeta.extend({ type: z.literal("ProvisionRotated"), ...ProvisionFields }).strict();
export type ProvisionRotated = z.infer<typeof ProvisionRotated>;
