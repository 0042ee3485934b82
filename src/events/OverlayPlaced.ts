import { z } from "zod";
import { EventMeta } from "./meta.ts";
import { MeshName } from "../manifest/manifest.ts";

/** A node was placed on the overlay, the private network of the mesh. */
export const OverlayPlaced = EventMeta.extend({
  type: z.literal("OverlayPlaced"),
  node: MeshName,
  hub: z.boolean(),
  /** The node's overlay name, `<node>.internal`. */
  overlayName: z.string().min(1),
}).strict();
export type OverlayPlaced = z.infer<typeof OverlayPlaced>;
