import { z } from "zod";
import { EventMeta } from "./meta.ts";

/** Genesis: the first record of a mesh. */
export const MeshCreated = EventMeta.extend({
  type: z.literal("MeshCreated"),
  /** The broker's public endpoint given at genesis (MESH_BROKER_ADDRESS), port filled in (R8). */
  genesisAddress: z.string().min(1),
  /**
   * SHA-256 fingerprint every client pins (R34): of the mesh CA's certificate, against which it
   * verifies the bus (R71); of the bus's self-signed certificate in a mesh made before R71.
   */
  fingerprint: z.string().regex(/^[0-9A-F]{2}(:[0-9A-F]{2}){31}$/, "SHA-256 fingerprint, AA:BB:..."),
  /** The bus user the installer carried at the well-known genesis seed (R13; a bootstrap password before nkeys). */
  bootstrapUser: z.string().min(1),
  /**
   * On a cluster (issue 14, R62): every server's client address, `tls://host:port`, the genesis
   * address first. Credentials whose address is the genesis address carry them all. Absent on one server.
   */
  addresses: z.array(z.string().min(1)).min(1).optional(),
  /** The host names genesis was given beside the address (`mesh genesis --name`): the bus's certificate names them (R71). */
  names: z.array(z.string().min(1)).optional(),
}).strict();
export type MeshCreated = z.infer<typeof MeshCreated>;
