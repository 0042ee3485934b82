import { z } from "zod";
import { EventMeta, CredentialFields } from "./meta.ts";

/** A principal was given its first credential (R1: usable from the next composition). */
export const CredentialMinted = EventMeta.extend({
  type: z.literal("CredentialMinted"),
  ...CredentialFields,
}).strict();
export type CredentialMinted = z.infer<typeof CredentialMinted>;
