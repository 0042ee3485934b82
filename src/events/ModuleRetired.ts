import { z } from "zod";
import { EventMeta } from "./meta.ts";
import { MeshName } from "../manifest/manifest.ts";

/**
 * A module left the catalogue (`mesh module retire`): its manifest and the seats it declared go,
 * its history stays. `version` is the one retired. Its credential, if any, is revoked by a
 * CredentialRevoked in the same commit (R66).
 */
export const ModuleRetired = EventMeta.extend({
  type: z.literal("ModuleRetired"),
  module: MeshName,
  version: z.string().min(1),
}).strict();
export type ModuleRetired = z.infer<typeof ModuleRetired>;
