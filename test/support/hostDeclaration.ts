import { sealToNode } from "../../src/crypto/secrets.ts";
import { Declaration } from "../../src/contracts/declaration.ts";

/**
 * A declaration for `node` as the controller would send it: each module with a credential whose
 * secret is sealed to the node's `publicKey`, a full module env, and any `extra` fields (a test of
 * the host's bounds adds large ones). Parsed by the contract, so a test cannot build a shape the
 * controller never sends.
 */
export function hostDeclaration(node: string, publicKey: string, modules: Array<{ module: string; password: string; extra?: Record<string, unknown> }>, digest: string): Declaration {
  return Declaration.parse({
    node,
    modules: modules.map((m) => ({
      module: m.module,
      version: "1.0.0",
      run: { image: `example/${m.module}:1` },
      credential: { address: "tls://bus.example:4222", user: `module-${m.module}`, sealed: sealToNode(publicKey, m.password), fingerprint: "AA:BB" },
      env: {
        MESH_BROKER_ADDRESS: "tls://bus.example:4222", MESH_BROKER_CERTIFICATE: "AA:BB", MESH_USER: `module-${m.module}`,
        MESH_INBOX_PREFIX: `_INBOX_module-${m.module}`, MESH_WORK: "[]", MESH_SUBMITS: "[]", MESH_EMITS: "[]", MESH_FOLLOWS: "[]", MESH_TOOLS: "[]",
      },
      provisions: [],
      ...(m.extra ?? {}),
    })),
    provisions: [],
    digest,
  });
}
