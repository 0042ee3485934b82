import { z } from "zod";
import { EventMeta } from "./meta.ts";
import { MeshName } from "../manifest/manifest.ts";

/** A module was taken off a node. */
export const ModuleUnassigned = EventMeta.extend({
  type: z.literal("ModuleUnassigned"),
  module: MeshName,
  node: MeshName,
}).strict();
export type ModuleUnassigned = z.infer<typeof ModuleUnassigned>;
