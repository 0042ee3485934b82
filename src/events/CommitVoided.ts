import { z } from "zod";
import { EventMeta } from "./meta.ts";

/**
 * An operator voided the commit at `sequence` (R45): it could not be folded (invalid, or an event
 * type this release does not know, `types` as stored), and every fold from now on skips it. The
 * stream itself is never edited. Filed under the mesh's records (recordsEntity in names.ts).
 */
export const CommitVoided = EventMeta.extend({
  type: z.literal("CommitVoided"),
  sequence: z.number().int().positive(),
  types: z.array(z.string()),
  reason: z.string().min(1).max(1000),
}).strict();
export type CommitVoided = z.infer<typeof CommitVoided>;
