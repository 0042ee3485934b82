import { z } from "zod";
import { EventMeta, CredentialFields } from "./meta.ts";

/**
 * A principal's credential was replaced by a new one. `overlap` (R73): the previous key stays
 * admitted, with the same permissions, until the module's nodes report the new one (a module's
 * `credential rotate`); absent when the old key must go at once (a node's removal R48, an accepted
 * restore R44, the controller's own R14, any other kind's rotation).
 */
export const CredentialRotated = EventMeta.extend({
  type: z.literal("CredentialRotated"),
  ...CredentialFields,
  overlap: z.literal(true).optional(),
}).strict();
export type CredentialRotated = z.infer<typeof CredentialRotated>;
