import { z } from "zod";
import { EventMeta } from "./meta.ts";
import { MeshName } from "../manifest/manifest.ts";

/** A seat was renamed, kept as a row of data (R27). */
export const SeatAliased = EventMeta.extend({
  type: z.literal("SeatAliased"),
  /** The old name; lookups of it resolve to `to` (R27). */
  from: MeshName,
  to: MeshName,
}).strict();
export type SeatAliased = z.infer<typeof SeatAliased>;
