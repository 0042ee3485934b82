import { z } from "zod";
import { EventMeta } from "./meta.ts";

/**
 * An operator accepted the records as they are after a restore or a lost tail (R44):
 * `evidence` is what showed them behind (empty when the operator knew it alone: a whole machine
 * restored, mark included), `lost` the sequences the world saw and the records no longer hold
 * (null when unknown). The same commit rotates every principal's credential it can
 * (CredentialRotated each), because the records cannot know what was revoked or rotated after the
 * backup. Filed under the mesh's records (RECORDS_ENTITY in names.ts).
 */
export const RecordsRestored = EventMeta.extend({
  type: z.literal("RecordsRestored"),
  evidence: z.array(z.object({ kind: z.string().min(1), detail: z.string().min(1) }).strict()),
  lost: z.object({ from: z.number().int().positive(), to: z.number().int().positive() }).strict().nullable(),
}).strict();
export type RecordsRestored = z.infer<typeof RecordsRestored>;

/** One piece of the world's evidence that the records are behind it (R43): what, in one line; a RecordsRestored names each it was accepted over. */
export type BehindEvidence = RecordsRestored["evidence"][number];
