import { z } from "zod";
import { PRINCIPAL_KINDS } from "../names.ts";

/**
 * What every event carries from its command's envelope: who asked, the command's id and the time
 * (ISO 8601, UTC). Taken from the envelope, never from a clock inside the domain.
 */
export const EventMeta = z.object({
  actor: z.string().min(1),
  commandId: z.string().min(1),
  at: z.string().datetime(),
});
export type EventMeta = z.infer<typeof EventMeta>;

/** A principal: anything with a credential (DESIGN.md section 2). */
export const Principal = z.object({ kind: z.enum(PRINCIPAL_KINDS), name: z.string().min(1) }).strict();
export type Principal = z.infer<typeof Principal>;

/**
 * A credential as the records hold it (section 5a): the bus user, the bcrypt hash for the user
 * list, the secret sealed with the mesh key (never the password in the clear), and the address it
 * was minted for (`tls://host:port`, no user or password inside, R3).
 */
export const CredentialFields = {
  principal: Principal,
  user: z.string().min(1),
  hash: z.string().regex(/^\$2[aby]\$\d\d\$/, "a bcrypt hash"),
  sealed: z.string().min(1),
  address: z.string().regex(/^[a-z]+:\/\/[^/@\s]+$/, "scheme://host:port with no user or password"),
};
