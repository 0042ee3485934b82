import { z } from "zod";
import { EventMeta } from "./meta.ts";
import { MeshName } from "../manifest/manifest.ts";

/** A module was placed on a node. */
export const ModuleAssigned = EventMeta.extend({
  type: z.literal("ModuleAssigned"),
  module: MeshName,
  node: MeshName,
}).strict();
export type ModuleAssigned = z.infer<typeof ModuleAssigned>;
