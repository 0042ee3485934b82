import { z } from "zod";
import { EventMeta } from "./meta.ts";
import { Manifest } from "../manifest/manifest.ts";

/** A module's manifest entered the catalogue (or replaced its earlier version). */
export const ModuleRegistered = EventMeta.extend({
  type: z.literal("ModuleRegistered"),
  manifest: Manifest,
  /** The version this registration replaced (same module, another version); absent on a first one. */
  replaces: z.string().min(1).optional(),
}).strict();
export type ModuleRegistered = z.infer<typeof ModuleRegistered>;
