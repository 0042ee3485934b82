import { z } from "zod";
import { EventMeta } from "./meta.ts";
import { MeshName } from "../manifest/manifest.ts";

/** A node left the mesh; its assignments and credential go with it. */
export const NodeRemoved = EventMeta.extend({
  type: z.literal("NodeRemoved"),
  node: MeshName,
}).strict();
export type NodeRemoved = z.infer<typeof NodeRemoved>;
