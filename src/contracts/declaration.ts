import { z } from "zod";
import { parseContract, versionField } from "./version.ts";
import { UserListRef } from "./userList.ts";

/**
 * A node's declaration (DESIGN.md section 7): what the controller composes (src/compose,
 * composeDeclaration), publishes on `declarationSubject(node)` (push, every secret re-sealed to the
 * node's X25519 key after the digest is taken) and the host applies (src/host). One schema for both
 * ends. The reader lets fields it does not know pass (`loose`): a newer controller that adds a field
 * without changing its meaning does not stop an older host; a change of meaning bumps `v`
 * (CONTRACT_VERSIONS.declaration), which the host refuses by name. Pure.
 */

/**
 * A credential as a declaration carries it. `sealed` is the secret sealed with the mesh key when
 * composed (compose holds no key) and sealed to the node's key once sent, so only the node opens it
 * (R3); the digest is taken over the mesh-sealed form, which is stable.
 */
export const DeclaredCredential = z
  .object({
    address: z.string().min(1),
    /** On a cluster every server's address, `address` first (R62); absent on one server. */
    addresses: z.array(z.string().min(1)).optional(),
    user: z.string().min(1),
    sealed: z.string().min(1),
    fingerprint: z.string(),
  })
  .strict();
export type DeclaredCredential = z.infer<typeof DeclaredCredential>;

/**
 * The node's own credential as its declaration names it (R64): address, user, the nkey public key
 * the records hold for it, and the fingerprint. No secret: the node generated its key pair and holds
 * the seed. A rotation (`mesh host rotate-key`, then `mesh credential rotate node --nkey`) changes
 * `nkey`; the host, seeing its pending key named, makes it its current one.
 */
export const NodeSelf = z
  .object({
    address: z.string().min(1),
    user: z.string().min(1),
    nkey: z.string().regex(/^U[A-Z2-7]{55}$/, "an nkey user public key (U...)"),
    fingerprint: z.string().optional(),
  })
  .loose();
export type NodeSelf = z.infer<typeof NodeSelf>;

/** A provision as its consumer receives it (the login the provider made for it; secret sealed as above). */
export const ReceivedProvision = z
  .object({ seat: z.string().min(1), provision: z.string().min(1), user: z.string(), sealed: z.string().min(1) })
  .strict();
export type ReceivedProvision = z.infer<typeof ReceivedProvision>;

/** A grant a provider on this node holds for one consumer of its seat (R31: minted before composing). */
export const ProvisionGrant = z
  .object({ seat: z.string().min(1), provision: z.string().min(1), consumer: z.string().min(1), user: z.string(), sealed: z.string().min(1) })
  .strict();
export type ProvisionGrant = z.infer<typeof ProvisionGrant>;

/**
 * A login a provider module on this node must create for one consumer of its seat (R75): no secret
 * here; the host finds it in the declaration's grant of the same seat, provision and consumer and
 * writes both to the provider's own folder (`logins.json`).
 */
export const ProvisionLogin = z
  .object({ seat: z.string().min(1), provision: z.string().min(1), consumer: z.string().min(1), user: z.string() })
  .strict();
export type ProvisionLogin = z.infer<typeof ProvisionLogin>;

/**
 * What the node runs for a module, as its manifest says (R72): a container image or a command,
 * the seconds of grace before SIGKILL, and `by: "mesh"` for what genesis's units run (no agent does).
 */
export const DeclaredRun = z
  .object({ image: z.string().optional(), command: z.array(z.string()).optional(), grace: z.number().optional(), by: z.string().optional() })
  .loose();
export type DeclaredRun = z.infer<typeof DeclaredRun>;

/**
 * A module's environment (R57), the variables its node writes to its `env` file: its address
 * (`MESH_BROKER_ADDRESS`), the bus certificate's fingerprint (`MESH_BROKER_CERTIFICATE`), its user
 * (`MESH_USER`), its inbox prefix (`MESH_INBOX_PREFIX`) and its work, submits, emits, follows and
 * tools as one-line JSON arrays (ModuleEnvironment of src/compose/environment.ts says what each
 * holds). The host adds its own (`MESH_PASSWORD`, `MESH_BROKER_CERTIFICATE_FILE`), so further
 * string variables pass.
 */
export const ModuleEnvironment = z
  .object({
    MESH_BROKER_ADDRESS: z.string(),
    MESH_BROKER_CERTIFICATE: z.string(),
    MESH_USER: z.string(),
    MESH_INBOX_PREFIX: z.string(),
    MESH_WORK: z.string(),
    MESH_SUBMITS: z.string(),
    MESH_EMITS: z.string(),
    MESH_FOLLOWS: z.string(),
    MESH_TOOLS: z.string(),
  })
  .catchall(z.string());
export type ModuleEnvironment = z.infer<typeof ModuleEnvironment>;

/**
 * One module the node must run, with what it needs to dial the bus pinned (R3, R34): its bus
 * credential, the environment it runs with (R57, ModuleEnvironment; the host adds MESH_PASSWORD
 * once it opened the credential and MESH_BROKER_CERTIFICATE_FILE once it holds the certificate's
 * PEM), and the provisions it receives. Fields the host does not know go to the module's `module.json` as they are.
 */
export const DeclaredModule = z
  .object({
    module: z.string().min(1),
    version: z.string(),
    run: DeclaredRun.default({}),
    credential: DeclaredCredential,
    env: ModuleEnvironment,
    provisions: z.array(ReceivedProvision).default([]),
    /** The logins it must create as a provider of a seat on this node (R75); absent when none. */
    logins: z.array(ProvisionLogin).optional(),
  })
  .loose();
export type DeclaredModule = z.infer<typeof DeclaredModule>;

/**
 * Everything the mesh wants one node to hold. `self` is the node's own current bus credential, its
 * public key and no secret (R64; a rotation changes it, so the node's digest changes and the next
 * push sends it, R31; the host dials with that key's seed), absent when the node has none. `modules` and `provisions` may be empty (an
 * empty declaration is still applied, R29). `userList` is present only on the node holding
 * mesh-broker (R11) and names the list that travels beside it in parts (UserListRef). `digest` is
 * `digest(canonicalJson(the rest))`, `v` included, and is what the node reports back (R32).
 * `recordsSequence` is the records' sequence it was composed from and `recordsTag` the
 * controller's tag on (node, digest, recordsSequence) under a key only the controller holds
 * (recordsTag in src/crypto/secrets.ts), both added by push outside the digest and reported back
 * (R43): a report of a sequence past the records' end is evidence only with a tag that verifies.
 * Optional fields, so `v` stays 1: a declaration from before the tag existed reads as before (a
 * host reporting it carries no tag, and its sequence is then no evidence).
 */
export const Declaration = z
  .object({
    v: versionField("declaration"),
    node: z.string().min(1),
    self: NodeSelf.optional(),
    modules: z.array(DeclaredModule).default([]),
    provisions: z.array(ProvisionGrant).default([]),
    userList: UserListRef.optional(),
    digest: z.string().min(1),
    recordsSequence: z.number().int().nonnegative().optional(),
    recordsTag: z.string().min(1).optional(),
  })
  .loose();
export type Declaration = z.infer<typeof Declaration>;

/** The declaration's known fields alone (no pass-through), for the writer's types. */
type KnownFields = z.infer<ReturnType<(typeof Declaration)["strict"]>>;

/** A declaration before its digest is taken: what compose hashes (`v` included). */
export type DeclarationBody = Omit<KnownFields, "digest" | "recordsSequence" | "recordsTag">;

/**
 * A declaration as received (the parsed JSON of a declaration message), checked against the
 * contract. Throws ContractError: `unsupported-version` naming `v` for a controller of another
 * version, `bad-message` naming the field otherwise.
 */
export function parseDeclaration(message: unknown): Declaration {
  return parseContract("declaration", Declaration, message, "the declaration");
}

/**
 * Why a declaration did not parse, in words for the node's report (R32): for another version, the
 * version message naming `v` (see versionField); otherwise "is malformed" and the fields at fault.
 */
export function declarationProblem(error: z.ZodError): string {
  const version = error.issues.find((issue) => issue.path.length === 1 && issue.path[0] === "v");
  if (version) return `is refused: ${version.message}`;
  return `is malformed (${error.issues.map((issue) => issue.path.join(".") || "(root)").join(", ")})`;
}

/**
 * A digest (a declaration's, a user list's) as every readable line shows it (the CLI's verbs, the
 * host's log, `mesh up`'s summary, the push's reasons): its first 12 hex characters, enough to tell
 * declarations apart at a glance. `--json` and the records keep the whole digest.
 */
export function shortDigest(digest: string): string {
  return digest.slice(0, 12);
}
