import { z } from "zod";
import { EventMeta, CredentialFields } from "./meta.ts";

/** A principal's credential was replaced by a new one. */
export const CredentialRotated = EventMeta.extend({
  type: z.literal("CredentialRotated"),
  ...CredentialFields,
}).strict();
export type CredentialRotated = z.infer<typeof CredentialRotated>;
