import { z } from "zod";
import { EventMeta } from "./meta.ts";
import { MeshName } from "../manifest/manifest.ts";

/** A seat moved from the node holding it to another (R17). */
export const SeatHandedOver = EventMeta.extend({
  type: z.literal("SeatHandedOver"),
  seat: MeshName,
  from: MeshName,
  to: MeshName,
}).strict();
export type SeatHandedOver = z.infer<typeof SeatHandedOver>;
