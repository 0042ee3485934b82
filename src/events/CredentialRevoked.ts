import { z } from "zod";
import { EventMeta, Principal } from "./meta.ts";

/** A principal lost its credential; it is left out of the next user list (R12). */
export const CredentialRevoked = EventMeta.extend({
  type: z.literal("CredentialRevoked"),
  principal: Principal,
}).strict();
export type CredentialRevoked = z.infer<typeof CredentialRevoked>;
