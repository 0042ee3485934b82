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
 * A credential as the records hold it (section 5a, R63, R64): the principal's name on the bus
 * (`user`, its inbox prefix, the name the records, explain and history show), its nkey public key
 * for the user list (`nkey`, `U...`), and the address it was minted for (`tls://host:port`, no user
 * or password inside, R3). `sealed` is the seed sealed with the mesh key, present only for a key
 * minted by the controller (the controller's own, an operator's, a module's, a builder's): a node
 * generates its key pair itself (`mesh host init`) and enrols with its public key, so the records
 * hold no secret of a node's at all. A credential recorded before nkeys carries a bcrypt `hash`
 * instead of `nkey`: it still folds, but is on no user list (the list holds keys only) until it
 * is rotated.
 */
export const CredentialFields = {
  principal: Principal,
  user: z.string().min(1),
  nkey: z.string().regex(/^U[A-Z2-7]{55}$/, "an nkey user public key (U...)").optional(),
  hash: z.string().regex(/^\$2[aby]\$\d\d\$/, "a bcrypt hash").optional(),
  sealed: z.string().min(1).optional(),
  address: z.string().regex(/^[a-z]+:\/\/[^/@\s]+$/, "scheme://host:port with no user or password"),
};

/** The entity a commit is about; its subject is `catalogueSubject(kind, id)` (src/names.ts). */
export const Entity = z.object({ kind: z.string().regex(/^[a-z]+$/), id: z.string().regex(/^[a-z0-9-]+$/) }).strict();
export type Entity = z.infer<typeof Entity>;
