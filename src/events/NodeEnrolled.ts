import { z } from "zod";
import { EventMeta } from "./meta.ts";
import { MeshName } from "../manifest/manifest.ts";

/** A node joined the mesh. Its credential is minted in the same commit (R1). */
export const NodeEnrolled = EventMeta.extend({
  type: z.literal("NodeEnrolled"),
  node: MeshName,
  /** The node's public key (X25519, base64 SPKI DER): secrets for the node are sealed to it. */
  publicKey: z.string().min(1),
}).strict();
export type NodeEnrolled = z.infer<typeof NodeEnrolled>;
