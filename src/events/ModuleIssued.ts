import { z } from "zod";
import { EventMeta } from "./meta.ts";
import { MeshName } from "../manifest/manifest.ts";

/** A module was issued: its credential is minted in the same commit (R1). */
export const ModuleIssued = EventMeta.extend({
  type: z.literal("ModuleIssued"),
  module: MeshName,
}).strict();
export type ModuleIssued = z.infer<typeof ModuleIssued>;
