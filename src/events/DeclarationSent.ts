import { z } from "zod";
import { EventMeta } from "./meta.ts";
import { MeshName } from "../manifest/manifest.ts";

/** A push sent a node its declaration; the records now know what the node was last sent (R31). */
export const DeclarationSent = EventMeta.extend({
  type: z.literal("DeclarationSent"),
  node: MeshName,
  /** Digest of the composed declaration sent (sha256 hex). */
  digest: z.string().regex(/^[0-9a-f]{64}$/),
  /** The records sequence the declaration was composed from. */
  recordsSequence: z.number().int().nonnegative(),
}).strict();
export type DeclarationSent = z.infer<typeof DeclarationSent>;
