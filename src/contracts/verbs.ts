import { z } from "zod";
import { MeshName, Follow } from "../manifest/manifest.ts";
import { ENTITY_KINDS, PRINCIPAL_KINDS } from "../names.ts";
import { Entity, Principal } from "../events/meta.ts";
import { Declaration } from "./declaration.ts";
import { ModuleRun } from "./report.ts";
import { CONTRACT_VERSIONS, versionField } from "./version.ts";

/**
 * The controller's verbs as they cross the bus (on `commandSubject(asker, verb)`, R51): for each verb
 * the request (the verb's fields, strict: an unknown field is refused naming it) and the reply the
 * controller answers when it accepts (the verb's body inside the envelope every command or query
 * reply has). The controller parses requests with these schemas and builds replies of these types;
 * the typed client (src/client) sends requests of these types and parses replies with these
 * schemas. Every request and reply carries `v` (CONTRACT_VERSIONS.verbs): a peer of another version
 * is refused `unsupported-version` naming `v`. One shape per verb, whatever the state. Pure.
 */

// ---------------------------------------------------------------------------------------------
// Shared pieces

/** The version field of every request and reply of a verb. */
const v = versionField("verbs");

/** This build's version of the verbs' contract, stamped on every request and reply. */
export const VERBS_VERSION = CONTRACT_VERSIONS.verbs;

/**
 * A refusal: a stable code (asserted by tests), a message naming the fix, and the field to fix;
 * `commandId` when a command failed after its id was known (R76: it may have been applied, and
 * sending it again with that id appends nothing twice and answers its reply).
 */
export const Refusal = z.object({ code: z.string().min(1), message: z.string(), field: z.string().optional(), commandId: z.string().optional() }).strict();
export type Refusal = z.infer<typeof Refusal>;

/** The command id a request may carry (its idempotency key, R53). */
export const CommandId = z
  .string()
  .regex(/^[A-Za-z0-9_.:-]{1,128}$/, "use 1 to 128 letters, digits, dots, dashes, colons or underscores");

/**
 * R68: the highest records sequence a CLI has seen, with the controller's tag on it (seenTag), as
 * it travels beside a request's fields and a reply's body (like `commandId` and `v`, not one of
 * any verb's own fields). The controller puts `seen` on its replies to a request that carried one
 * (an older CLI sends none and is sent none, so its strict parse of the reply still holds); the CLI
 * keeps the highest and sends it with every command. `{ sequence: 0 }` without a tag says "none
 * yet". A sequence past the records' end whose tag verifies is evidence that they are behind (R43).
 */
export const Seen = z
  .object({
    sequence: z.number().int().nonnegative(),
    tag: z.string().regex(/^[A-Za-z0-9_-]{43}$/, "not the controller's tag (43 base64url characters): send the tag of the reply it came with").optional(),
  })
  .strict();
export type Seen = z.infer<typeof Seen>;

/**
 * A node's public key as a request carries it: base64, non-empty. Only the shape is checked
 * here; that it is a real X25519 SPKI key is checked by the controller's shell, which has the crypto.
 */
export const PublicKeyText = z
  .string()
  .min(1, "the node's public key is empty: pass the base64 X25519 key the host agent printed")
  .regex(/^[A-Za-z0-9+/]+={0,2}$/, "not base64: pass the base64 X25519 key the host agent printed")
  .refine((key) => key.length % 4 === 0, "not base64 (its length is not a multiple of 4)");

/**
 * A node's nkey public key as a request carries it (R63, R64): `U` and 55 base32 characters, the
 * key `mesh host init` (or `mesh host rotate-key`) generated on the node and printed. Its seed
 * never leaves the node; the user list carries this key.
 */
export const NkeyText = z
  .string()
  .regex(/^U[A-Z2-7]{55}$/, "not an nkey user public key (U and 55 base32 characters): pass the key `mesh host init` or `mesh host rotate-key` printed");

/** The most items a page of a list verb holds, whatever fits (R59: a bound on work per request). */
export const PAGE_LIMIT_MAX = 5000;

/** The paging fields of a list request (R59): `limit` items at most, from the position `continue` names. */
export const PageRequest = z
  .object({
    limit: z.number().int().min(1).max(PAGE_LIMIT_MAX).optional(),
    continue: z.string().min(1).max(4096).optional(),
  })
  .strict();
export type PageRequest = z.infer<typeof PageRequest>;

/** The paging fields as a list verb's request carries them beside its own. */
const paging = PageRequest.shape;

/** What a list cut to fit the max payload left out (R59, fitReply): how many items, and where to read them. */
export const Omitted = z.object({ count: z.number().int().nonnegative(), see: z.string() }).strict();
export type Omitted = z.infer<typeof Omitted>;

/**
 * What every accepted command's reply carries besides its body: `commandId` (the id applied),
 * `duplicate` (the id was applied before: nothing appended this time, R53), `unchanged` (the
 * records already said it), `sequence` (the commit's stream sequence), and `omitted` when a list
 * of the body was cut to fit the max payload (R59).
 */
const COMMAND_ENVELOPE = {
  ok: z.literal(true),
  v,
  commandId: z.string(),
  duplicate: z.boolean(),
  unchanged: z.literal(true).optional(),
  sequence: z.number().int().nonnegative(),
  omitted: z.record(z.string(), Omitted).optional(),
};

/** What every query's reply carries besides its body: `asOf` (the sequence answered at), `continue` for a list with more pages (R59). */
const QUERY_ENVELOPE = { ok: z.literal(true), v, asOf: z.number().int().nonnegative(), continue: z.string().optional() };

function commandReply<Shape extends z.ZodRawShape>(body: Shape) {
  return z.object({ ...COMMAND_ENVELOPE, ...body }).strict();
}

function queryReply<Shape extends z.ZodRawShape>(body: Shape) {
  return z.object({ ...QUERY_ENVELOPE, ...body }).strict();
}

/**
 * Any reply as it comes off the bus (or as the server builds it), before its verb's contract types
 * it: accepted, `{ ok: true, ... }`, or refused, `{ ok: false, error }`.
 */
export type AnyReply =
  | ({ ok: true; v?: number; duplicate?: boolean; unchanged?: boolean } & Record<string, unknown>)
  | { ok: false; v?: number; error: Refusal };

/** The reply to any refused request: `{ ok: false, v, error }`. */
export const RefusedReply = z.object({ ok: z.literal(false), v, error: Refusal }).strict();
export type RefusedReply = z.infer<typeof RefusedReply>;

/**
 * A command's dry run (`dryRun: true`): what it would append after `wouldAppendAfter`, nothing
 * written; every hash, password and sealed secret taken out of the events (R3). `duplicate` when the
 * id was applied already (no events), `unchanged` when the records already say it.
 */
export const DryRunReply = z
  .object({
    ok: z.literal(true),
    v,
    dryRun: z.literal(true),
    commandId: z.string(),
    wouldAppendAfter: z.number().int().nonnegative(),
    duplicate: z.literal(true).optional(),
    unchanged: z.literal(true).optional(),
    entity: Entity.optional(),
    events: z.array(z.record(z.string(), z.unknown())),
  })
  .strict();
export type DryRunReply = z.infer<typeof DryRunReply>;

/** A credential's public part as a reply shows it: where it dials, its user, the bus certificate's fingerprint. */
/** `addresses`: on a cluster every server, the address first (R62); absent on one server. */
const CredentialPublic = { address: z.string(), addresses: z.array(z.string()).optional(), user: z.string(), fingerprint: z.string() };

// ---------------------------------------------------------------------------------------------
// Commands: they change the records.

/**
 * `node.enrol {node, publicKey, nkey}`: a machine joins the mesh with the two public keys its host
 * generated (`mesh host init`): the X25519 key secrets are sealed to, and the nkey its bus
 * credential is (R1, R63, R64). Neither private half ever leaves the node.
 */
export const NodeEnrolRequest = z
  .object({
    v,
    node: MeshName.describe("the node's name, also its overlay label"),
    publicKey: PublicKeyText.describe("the node's X25519 public key, base64 SPKI DER"),
    nkey: NkeyText.describe("the node's nkey public key (U...), generated by `mesh host init` on the node"),
  })
  .strict();
export type NodeEnrolRequest = z.infer<typeof NodeEnrolRequest>;
/** The node's credential without any secret (R64): address, user, the nkey it was enrolled with, fingerprint. */
export const NodeEnrolReply = commandReply({
  node: z.string(),
  credential: z.object({ ...CredentialPublic, nkey: z.string() }).strict(),
});

/** `node.remove {node}`: a machine leaves the mesh. */
export const NodeRemoveRequest = z.object({ v, node: MeshName.describe("the enrolled node to remove") }).strict();
export type NodeRemoveRequest = z.infer<typeof NodeRemoveRequest>;
/** A provision by its key's parts: the seat that grants it, its name, the module receiving it. */
export const ProvisionName = z.object({ seat: z.string(), provision: z.string(), consumer: z.string() }).strict();

/** The node removed, the principals given fresh credentials and the provisions given fresh secrets (R48). */
export const NodeRemoveReply = commandReply({ node: z.string(), freshCredentials: z.array(Principal), freshProvisions: z.array(ProvisionName) });

/**
 * `module.register {manifest}`: a module's manifest enters the catalogue, or replaces its earlier
 * version. The manifest travels as plain JSON and is parsed by decide, so a bad one is refused
 * with the code `invalid-manifest` and the dotted field (`manifest.seats.x.wat`), R23.
 */
export const ModuleRegisterRequest = z
  .object({ v, manifest: z.unknown().describe("the module's manifest, the content of its module.json") })
  .strict();
export type ModuleRegisterRequest = z.infer<typeof ModuleRegisterRequest>;
/** The module, its version, the seats it declares and claims; `replaced`: the version a new one replaced. */
export const ModuleRegisterReply = commandReply({
  module: z.string(),
  version: z.string(),
  declares: z.array(z.string()),
  claims: z.array(z.string()),
  replaced: z.string().optional(),
});

/** `module.issue {module}`: a registered module gets its credential (R1). */
export const ModuleIssueRequest = z.object({ v, module: MeshName.describe("the registered module to issue") }).strict();
export type ModuleIssueRequest = z.infer<typeof ModuleIssueRequest>;
/** The module's user, address and fingerprint; no password: its node's declaration carries it, sealed (R3). */
export const ModuleIssueReply = commandReply({ module: z.string(), credential: z.object(CredentialPublic).strict() });

/**
 * `module.retire {module}`: a registered module leaves the catalogue (refused while it is assigned
 * anywhere, or while another module claims, uses or follows a seat it declares); its credential is
 * revoked, so the next push leaves it off the user list, and its history stays. Again: unchanged.
 */
export const ModuleRetireRequest = z.object({ v, module: MeshName.describe("the registered module to retire") }).strict();
export type ModuleRetireRequest = z.infer<typeof ModuleRetireRequest>;
/** The module and the version retired; `credentialRevoked`: this commit revoked its credential (false on a repeat). */
export const ModuleRetireReply = commandReply({ module: z.string(), version: z.string(), credentialRevoked: z.boolean() });

/** `assign {module, node}`: place a module on a node. */
export const AssignRequest = z
  .object({ v, module: MeshName.describe("the registered module"), node: MeshName.describe("the enrolled node") })
  .strict();
export type AssignRequest = z.infer<typeof AssignRequest>;
/** The assignment made and every node the module is now on. */
export const AssignReply = commandReply({ module: z.string(), node: z.string(), nodes: z.array(z.string()) });

/** `unassign {module, node}`: take a module off a node. */
export const UnassignRequest = z
  .object({ v, module: MeshName.describe("the assigned module"), node: MeshName.describe("the node it runs on") })
  .strict();
export type UnassignRequest = z.infer<typeof UnassignRequest>;
/** The assignment removed and the nodes the module is still on. */
export const UnassignReply = commandReply({ module: z.string(), node: z.string(), nodes: z.array(z.string()) });

/** `seat.alias {from, to}`: rename a seat as a row of data; lookups of `from` resolve to `to` (R27). */
export const SeatAliasRequest = z
  .object({ v, from: MeshName.describe("the old seat name"), to: MeshName.describe("the seat it now resolves to") })
  .strict();
export type SeatAliasRequest = z.infer<typeof SeatAliasRequest>;
/** The alias and the seat it resolves to now. */
export const SeatAliasReply = commandReply({ from: z.string(), to: z.string(), resolvesTo: z.string() });

/** `seat.handover {seat, from, to}`: move a seat from the node holding it to another node (R17). */
export const SeatHandoverRequest = z
  .object({
    v,
    seat: MeshName.describe("the seat to move (an alias resolves)"),
    from: MeshName.describe("the node holding it now"),
    to: MeshName.describe("the enrolled node to hold it"),
  })
  .strict();
export type SeatHandoverRequest = z.infer<typeof SeatHandoverRequest>;
/** The move, the modules moved with it, and the seat's holders now. */
export const SeatHandoverReply = commandReply({
  seat: z.string(), from: z.string(), to: z.string(), modulesMoved: z.array(z.string()), holders: z.array(z.string()),
});

/** `overlay.place {node, hub?}`: put a node on the mesh's private network, optionally as its hub. */
export const OverlayPlaceRequest = z
  .object({
    v,
    node: MeshName.describe("the enrolled node to place"),
    hub: z.boolean().optional().describe("make this node the overlay's one hub"),
  })
  .strict();
export type OverlayPlaceRequest = z.infer<typeof OverlayPlaceRequest>;
/** A credential minted for an address other than the one its principal would get now. */
export const StaleCredential = z.object({ principal: Principal, user: z.string(), address: z.string(), addressNow: z.string() }).strict();
export type StaleCredential = z.infer<typeof StaleCredential>;
/** The placement, and which recorded addresses differ from the ones now (R10). */
export const OverlayPlaceReply = commandReply({
  node: z.string(), overlayName: z.string(), hub: z.boolean(), note: z.string(), staleCredentials: z.array(StaleCredential),
});

/** What a request whose principal kind is not one is told (explain, credential rotate), in words as history's entity kind. */
const PRINCIPAL_KIND_ERROR = `a principal kind: one of ${PRINCIPAL_KINDS.join(", ")}`;

/**
 * `credential.rotate {kind, name, nkey?}`: replace a principal's credential with a new key pair. A
 * node's new pair is generated on the node (`mesh host rotate-key`, R64) and only its public key
 * (`nkey`) comes here; every other kind's is minted by the controller.
 */
export const CredentialRotateRequest = z
  .object({
    v,
    kind: z.enum(PRINCIPAL_KINDS, { error: PRINCIPAL_KIND_ERROR }).describe("the principal's kind: controller, operator, node, module or builder"),
    name: MeshName.describe("the principal's name"),
    nkey: NkeyText.optional().describe("node only: the new nkey public key `mesh host rotate-key` printed on the node"),
  })
  .strict();
export type CredentialRotateRequest = z.infer<typeof CredentialRotateRequest>;
/**
 * Address, user, the new public key (`nkey`) and fingerprint; for an operator rotating its own
 * credential the new seed itself (`seed`: to its own inbox alone, R33; its CLI keeps it and never
 * prints it, R3). A node's reply carries no secret: it made the key (R64).
 */
export const CredentialRotateReply = commandReply({
  principal: Principal,
  credential: z.object({ ...CredentialPublic, nkey: z.string(), seed: z.string().optional() }).strict(),
});

// ---------------------------------------------------------------------------------------------
// Queries: they only read.

/** `where {}`: where every node is on the overlay, the hub, and the node the broker runs on. */
export const WhereRequest = z.object({ v, ...paging }).strict();
export type WhereRequest = z.infer<typeof WhereRequest>;
/** One placed node: its overlay name (R7), and whether it is the hub (R9) or the broker's node (R6). */
export const PlacedNode = z.object({ node: z.string(), overlayName: z.string(), hub: z.boolean(), broker: z.boolean() }).strict();
export type PlacedNode = z.infer<typeof PlacedNode>;
/** `placed` sorted by node; `hub` and `broker` null when there is none. */
export const WhereReply = queryReply({ placed: z.array(PlacedNode), hub: z.string().nullable(), broker: z.string().nullable() });

/** `seats {}`: every seat of the catalogue. */
export const SeatsRequest = z.object({ v, ...paging }).strict();
export type SeatsRequest = z.infer<typeof SeatsRequest>;
/** A seat: its declaration, claimants, holders (R17) and the aliases resolving to it (R27). */
export const SeatView = z
  .object({
    name: z.string(),
    declaredBy: z.string(),
    protocol: z.string(),
    marker: z.boolean(),
    accepts: z.array(z.string()),
    emits: z.array(z.string()),
    provides: z.string().nullable(),
    scope: z.enum(["mesh", "node"]),
    claimants: z.array(z.string()),
    holders: z.array(z.string()),
    aliases: z.array(z.string()),
  })
  .strict();
export type SeatView = z.infer<typeof SeatView>;
export const SeatsReply = queryReply({ seats: z.array(SeatView) });

/** `nodes {}`: every enrolled node. */
export const NodesRequest = z.object({ v, ...paging }).strict();
export type NodesRequest = z.infer<typeof NodesRequest>;
/** A node: overlay place, modules, its credential's address (never a secret) and what it was last sent. */
export const NodeView = z
  .object({
    name: z.string(),
    enrolledAt: z.string(),
    overlayName: z.string().nullable(),
    hub: z.boolean(),
    modules: z.array(z.string()),
    credentialAddress: z.string().nullable(),
    lastSent: z.object({ digest: z.string(), at: z.string() }).strict().nullable(),
  })
  .strict();
export type NodeView = z.infer<typeof NodeView>;
export const NodesReply = queryReply({ nodes: z.array(NodeView) });

/** `modules {}`: every registered module. */
export const ModulesRequest = z.object({ v, ...paging }).strict();
export type ModulesRequest = z.infer<typeof ModulesRequest>;
/** A module: version, whether issued, the nodes it is on, and what its manifest states. */
export const ModuleView = z
  .object({
    name: z.string(),
    version: z.string(),
    registeredAt: z.string(),
    issued: z.boolean(),
    nodes: z.array(z.string()),
    declares: z.array(z.string()),
    claims: z.array(z.string()),
    uses: z.array(z.string()),
    follows: z.array(Follow),
    tools: z.array(z.string()),
  })
  .strict();
export type ModuleView = z.infer<typeof ModuleView>;
export const ModulesReply = queryReply({ modules: z.array(ModuleView) });

/** `credentials {}`: every current credential, without its secret. */
export const CredentialsRequest = z.object({ v, ...paging }).strict();
export type CredentialsRequest = z.infer<typeof CredentialsRequest>;
/** A credential as shown: principal, user, address and when minted. NEVER the hash or the sealed secret (R3). */
export const CredentialView = z.object({ principal: Principal, user: z.string(), address: z.string(), mintedAt: z.string() }).strict();
export type CredentialView = z.infer<typeof CredentialView>;
export const CredentialsReply = queryReply({ credentials: z.array(CredentialView) });

/** The most events one history answer holds unless `limit` says fewer: the newest ones. */
export const HISTORY_LIMIT = 500;

/**
 * `history {kind, id, limit?}`: every event ABOUT one entity (`node alpha`, `module showcase`,
 * `seat mesh-build`, `operator alice`), wherever its commit was filed; the newest `limit` (default
 * HISTORY_LIMIT). `kind` is one of ENTITY_KINDS: anything else is refused naming the valid kinds.
 */
export const HistoryRequest = z
  .object({
    v,
    kind: z.enum(ENTITY_KINDS, { error: `an entity kind: one of ${ENTITY_KINDS.join(", ")}` }).describe("the entity's kind"),
    id: z.string().regex(/^[a-z0-9-]+$/, "an entity id: lowercase letters, digits and dashes").describe("the entity's name"),
    limit: z.number().int().min(1).max(HISTORY_LIMIT).optional().describe(`the newest events to answer, 1 to ${HISTORY_LIMIT} (default ${HISTORY_LIMIT})`),
  })
  .strict();
export type HistoryRequest = z.infer<typeof HistoryRequest>;
/**
 * One event of an entity's history. `filedUnder` is the entity its commit was filed under;
 * `summary` names the parties in words; `details` the event's own fields, secrets left out (R3).
 */
export const HistoryEntry = z
  .object({
    sequence: z.number().int().positive(),
    commandId: z.string(),
    actor: z.string(),
    at: z.string(),
    type: z.string(),
    filedUnder: z.string(),
    summary: z.string(),
    details: z.record(z.string(), z.unknown()),
  })
  .strict();
export type HistoryEntry = z.infer<typeof HistoryEntry>;
/** The entity, its events (oldest first), how many were found, and whether older ones were left out. */
export const HistoryReply = queryReply({ entity: Entity, events: z.array(HistoryEntry), total: z.number().int().nonnegative(), truncated: z.boolean() });

/** The most pushes one `pushes` answer holds; PUSHES_DEFAULT unless `limit` says otherwise. */
export const PUSHES_LIMIT = 20;
export const PUSHES_DEFAULT = 5;
/** The most nodes a push's view lists by name (`nodes`); `sent` counts them all. */
export const PUSH_NODES_SHOWN = 50;

/** `pushes {limit?}`: the newest pushes the records hold (their DeclarationSent and ProvisionMinted commits, R31), newest first. */
export const PushesRequest = z
  .object({
    v,
    limit: z.number().int().min(1).max(PUSHES_LIMIT).default(PUSHES_DEFAULT).describe(`the newest pushes to answer, 1 to ${PUSHES_LIMIT} (default ${PUSHES_DEFAULT})`),
  })
  .strict();
export type PushesRequest = z.infer<typeof PushesRequest>;
/**
 * One push as the records tell it: its id (the entity its commits were filed under), when it
 * started and who asked (`at`, `actor`), its commits' command ids and sequences, the records
 * sequence it composed from, how many nodes it sent a declaration (`sent`), the first
 * PUSH_NODES_SHOWN of them with the digest sent (`nodes`), and the provisions it minted. What each
 * node made of it is in the node's last report (`reports`, `nodes`), not in the records.
 */
export const PushView = z
  .object({
    id: z.string(),
    at: z.string(),
    actor: z.string(),
    commandIds: z.array(z.string()),
    sequences: z.array(z.number().int().positive()),
    recordsSequence: z.number().int().nonnegative().nullable(),
    sent: z.number().int().nonnegative(),
    nodes: z.array(z.object({ node: z.string(), digest: z.string() }).strict()),
    provisions: z.number().int().nonnegative(),
  })
  .strict();
export type PushView = z.infer<typeof PushView>;
export const PushesReply = queryReply({ pushes: z.array(PushView) });

/**
 * A subject as a client would write it: dot-separated non-empty tokens, no whitespace, wildcards
 * (`*`, `>`) allowed (a wildcard subject is allowed only when one grant covers all of it).
 */
const Subject = z
  .string()
  .max(512, "a subject of at most 512 characters")
  .regex(/^[^\s.]+(\.[^\s.]+)*$/, "a NATS subject: dot-separated tokens, no spaces, no empty token");

/** `explain {kind, name, direction?, subject?}`: may this principal publish or subscribe this subject? Without both: its grants. */
export const ExplainRequest = z
  .object({
    v,
    kind: z.enum(PRINCIPAL_KINDS, { error: PRINCIPAL_KIND_ERROR }).describe("the principal's kind: controller, operator, node, module or builder"),
    name: MeshName.describe("the principal's name"),
    direction: z.enum(["pub", "sub"]).optional().describe("pub (publish) or sub (subscribe); with subject, or neither to list every grant"),
    subject: Subject.optional().describe("the subject asked about; wildcards as the client would write them"),
  })
  .strict()
  .refine((request) => (request.direction === undefined) === (request.subject === undefined), {
    message: "give direction and subject together, or neither to list the principal's grants",
    path: ["subject"],
  });
export type ExplainRequest = z.infer<typeof ExplainRequest>;
/** One grant with its provenance: which manifest line or record allows it. */
export const Grant = z.object({ direction: z.enum(["pub", "sub"]), subject: z.string(), because: z.string() }).strict();
export type Grant = z.infer<typeof Grant>;
/** Set when the controller lent no composition settings: what the answer assumed (R19). */
const assumed = z.string().optional();
/**
 * Present, true, when the principal's key in the records was rotated after the user list last sent
 * to the broker's holders was composed: it is on no list sent yet, the next push installs it, and
 * until then the bus admits the key it replaced (R50).
 */
const keyUnsent = z.literal(true).optional();
/**
 * R73: present when the principal (a rotated module) keeps the key its credential replaced: the
 * nodes whose report of the new one ends its admission (the push after that report drops it).
 */
const previousKeyUntil = z.array(z.string()).optional();
/**
 * With direction and subject: whether it is allowed, the grants that allow it (`because`), or why
 * nothing does (`reason`); `onTheBus` false when the principal has no credential (R12).
 */
export const ExplainSubjectAnswer = z
  .object({
    principal: Principal,
    user: z.string(),
    direction: z.enum(["pub", "sub"]),
    subject: z.string(),
    allowed: z.boolean(),
    because: z.array(Grant),
    reason: z.string().optional(),
    onTheBus: z.boolean(),
    credentialSince: z.string().optional(),
    keyUnsent,
    previousKeyUntil,
    assumed,
  })
  .strict();
export type ExplainSubjectAnswer = z.infer<typeof ExplainSubjectAnswer>;
/** Without a subject: every grant of the principal, whether it answers requests, whether it is on the bus (R12). */
export const GrantsAnswer = z
  .object({
    principal: Principal,
    user: z.string(),
    grants: z.array(Grant),
    responder: z.boolean(),
    onTheBus: z.boolean(),
    credentialSince: z.string().optional(),
    keyUnsent,
    previousKeyUntil,
    assumed,
  })
  .strict();
export type GrantsAnswer = z.infer<typeof GrantsAnswer>;
export const ExplainReply = z.union([
  ExplainSubjectAnswer.extend(QUERY_ENVELOPE).strict(),
  GrantsAnswer.extend(QUERY_ENVELOPE).strict(),
]);

// ---------------------------------------------------------------------------------------------
// Verbs the controller's shell serves itself: push, reports, replay.

/** The longest `--wait` a push request may ask for, in milliseconds (10 minutes). */
export const MAX_PUSH_WAIT_MS = 600_000;

/** `push {nodes?, wait?, timeoutMs?, dryRun?, progressSubject?}`: see push(). Unknown fields are refused. */
export const PushRequest = z
  .object({
    v,
    nodes: z.array(MeshName).default([]).describe("nodes to send even when not behind (the behind ones are sent too, R31)"),
    wait: z.boolean().default(false).describe("wait for each sent node's report of the applied digest (R32)"),
    timeoutMs: z.number().int().positive().max(MAX_PUSH_WAIT_MS).optional().describe("milliseconds to wait with `wait`"),
    dryRun: z.boolean().default(false).describe("compose and report, secrets redacted; send nothing"),
    progressSubject: z.string().min(1).max(255).regex(/^[^\s*>]+$/, "a subject without wildcards or spaces")
      .optional().describe("where to publish progress lines: a subject inside the asker's own inbox (progressSubject in src/names.ts)"),
  })
  .strict();
export type PushRequest = z.infer<typeof PushRequest>;

/** What became of one node in a push. */
export const NodeOutcome = z.enum(["sent", "unchanged", "refused", "applied", "failed", "timed-out"]);
export type NodeOutcome = z.infer<typeof NodeOutcome>;

/** One node's line of a push report. `error` is the node's own report (failed) or the send's failure. */
export const PushNodeLine = z
  .object({
    node: z.string(),
    outcome: NodeOutcome,
    digest: z.string().optional(),
    refusal: Refusal.optional(),
    error: z.string().optional(),
    /** Modules assigned to the node but left out of what it was sent (no credential yet), and why. */
    modulesLeftOut: z.array(z.object({ module: z.string(), reason: z.string() }).strict()).optional(),
    /** With `wait`, for an `unchanged` node: when the bus stored its last report of this digest (R32, R55). */
    reportedAt: z.string().optional(),
    /** The node holds mesh-broker: its outcome says whether the user list sent is live (R50). */
    holdsUserList: z.literal(true).optional(),
  })
  .strict();
export type PushNodeLine = z.infer<typeof PushNodeLine>;

/**
 * The reply of a push (R12, R30, R32): what it did per node, the principals left out of the user
 * list and why, why no list reached the bus (`userList`) when none did, the fresh credentials its
 * list is the first to carry, `counts` per outcome (always whole), and, when the report did not fit
 * the max payload, `omitted` (R59). `declarations`: a dry run's compositions, secrets redacted.
 */
export const PushReply = z
  .object({
    ok: z.literal(true),
    v,
    pushId: z.string(),
    dryRun: z.boolean(),
    recordsSequence: z.number().int().nonnegative(),
    nodes: z.array(PushNodeLine),
    leftOut: z.array(z.object({ principal: Principal, reason: z.string() }).strict()),
    userList: Refusal.optional(),
    freshCredentials: z.array(Principal),
    /** R73: principals whose previous key this push's list still admits, until these nodes report the new one. */
    overlaps: z.array(z.object({ principal: Principal, until: z.array(z.string()) }).strict()).optional(),
    /** Provisions whose rotated secret this push is the first to carry to a node receiving or granting them (R44, R48). */
    freshProvisions: z.array(ProvisionName),
    /** Provisions minted before composing (R31); in a dry run, the ones the push would mint. */
    provisionsMinted: z.number().int().nonnegative(),
    controllerRotation: z.enum(["applied", "pending"]).optional(),
    raised: z.object({
      created: z.number().int().nonnegative(),
      updated: z.number().int().nonnegative(),
      refused: z.array(z.object({ object: z.string(), reason: z.string() }).strict()),
    }).strict(),
    timedOut: z.array(z.string()),
    rounds: z.number().int().nonnegative(),
    boundHit: z.boolean(),
    declarations: z.array(Declaration).optional(),
    /** R60, on a cluster: each server's outcome of the list a broker holder applied in this push. */
    servers: z.array(z.object({
      node: z.string(), server: z.string(), ok: z.boolean(), changed: z.boolean().optional(), error: z.string().optional(),
    }).strict()).optional(),
    counts: z.partialRecord(NodeOutcome, z.number().int().nonnegative()),
    omitted: z.record(z.string(), Omitted).optional(),
  })
  .strict();
export type PushReply = z.infer<typeof PushReply>;

/** Nodes per `reports` reply at most (R59: a report is a few hundred bytes; 500 stay far under 1 MiB). */
export const REPORTS_PAGE = 500;

/** `reports {nodes?, after?, limit?}`: the named nodes' last reports, or every node's, a page at a time (R55). */
export const ReportsRequest = z
  .object({
    v,
    nodes: z.array(MeshName).max(REPORTS_PAGE).optional().describe(`the nodes whose last report to read (at most ${REPORTS_PAGE}); default every node that reported`),
    after: MeshName.optional().describe("without nodes: start after this node name (the previous page's `next`)"),
    limit: z.number().int().positive().max(REPORTS_PAGE).default(REPORTS_PAGE).describe("without nodes: reports per page"),
  })
  .strict();
export type ReportsRequest = z.infer<typeof ReportsRequest>;
/** A node's last report as the bus holds it: what it applied (digest, ok), when (`at`, the stream's time), drift, error. */
export const LastReport = z
  .object({
    node: z.string(),
    at: z.string(),
    digest: z.string(),
    ok: z.boolean(),
    error: z.string().optional(),
    drift: z.array(z.string()).optional(),
    /** R72: each module's run state as the node last reported it. */
    modules: z.array(ModuleRun).optional(),
  })
  .strict();
export type LastReport = z.infer<typeof LastReport>;
/** The reports found (a node with none is absent), and `next` when another page follows. */
export const ReportsReply = z.object({ ok: z.literal(true), v, reports: z.array(LastReport), next: z.string().optional() }).strict();
export type ReportsReply = z.infer<typeof ReportsReply>;

/** `replay {void?, reason?, acceptRestore?}` (R44, R45). Unknown fields are refused. */
export const ReplayRequest = z
  .object({
    v,
    void: z.number().int().positive().optional().describe("the sequence of the commit to void (the one the fold stopped at, R45)"),
    reason: z.string().trim().min(1).max(1000).optional().describe("why the commit is voided (required with void)"),
    acceptRestore: z.boolean().optional().describe("accept the records as they are after a restore: every principal but the nodes (they keep their own key, R64) gets a fresh key (R44)"),
  })
  .strict();
export type ReplayRequest = z.infer<typeof ReplayRequest>;

/** Where the fold stopped: the commit's sequence, its event types, and why in one line. */
const StoppedAt = z.object({ sequence: z.number().int().nonnegative(), types: z.array(z.string()), reason: z.string() }).strict();

/**
 * The three answers of `replay`, one per request: the report of a fold from sequence 1 (`{}`,
 * changes nothing), the void of the commit the fold stopped at (`{void, reason}`), and an accepted
 * restore (`{acceptRestore: true}`). Each says `changed`.
 */
export const ReplayReportReply = z
  .object({
    ok: z.literal(true),
    v,
    valid: z.boolean(),
    lastSequence: z.number().int().nonnegative(),
    digest: z.string().optional(),
    counts: z.record(z.string(), z.number()),
    matchesServing: z.boolean().optional(),
    stoppedAt: StoppedAt.optional(),
    behind: z.unknown().optional(),
    /** R47: the records erase commits or erased some: the stream setting, and the whole line with its fix. */
    unsafe: z.object({ setting: z.string(), message: z.string() }).strict().optional(),
    changed: z.literal(false),
  })
  .strict();
export const ReplayVoidReply = z
  .object({
    ok: z.literal(true),
    v,
    commandId: z.string(),
    duplicate: z.boolean(),
    sequence: z.number().int().nonnegative(),
    voided: z.number().int().positive(),
    lastSequence: z.number().int().nonnegative(),
    stoppedAt: StoppedAt.nullable(),
    changed: z.boolean(),
  })
  .strict();
export const ReplayAcceptReply = z
  .object({
    ok: z.literal(true),
    v,
    commandId: z.string(),
    duplicate: z.boolean(),
    sequence: z.number().int().nonnegative(),
    accepted: z.literal(true),
    evidence: z.array(z.object({ kind: z.string(), detail: z.string() }).strict()),
    lost: z.object({ from: z.number(), to: z.number() }).strict().nullable(),
    rotated: z.union([z.array(Principal), z.object({ count: z.number().int().nonnegative() }).strict()]),
    revoked: z.union([z.array(Principal), z.object({ count: z.number().int().nonnegative() }).strict()]).optional(),
    /** Every minted provision, given a fresh secret in the accepting commit (R44); a count past 1,000. */
    freshProvisions: z.union([z.array(ProvisionName), z.object({ count: z.number().int().nonnegative() }).strict()]),
    nodeKeys: z.string().optional(),
    unknownToRecords: z.array(z.string()),
    absentLeftOut: z.number().int().positive().optional(),
    absentFromInstalledList: z.array(z.object({ kind: z.enum(PRINCIPAL_KINDS), name: z.string(), user: z.string(), why: z.string(), next: z.string() }).strict()),
    credential: z.object({ ...CredentialPublic, seed: z.string() }).strict().optional(),
    next: z.string(),
    changed: z.boolean(),
  })
  .strict();
export const ReplayReply = z.union([ReplayAcceptReply, ReplayVoidReply, ReplayReportReply]);

// ---------------------------------------------------------------------------------------------
// The registry: every verb, its one-line summary, its request and its reply.

/** How a verb is served: a command (decide, one commit), a query (answered from the state), or by the controller's shell. */
export type VerbKind = "command" | "query" | "shell";

/**
 * One verb's contract: how it is served, its summary (the one description of the verb: the CLI's
 * help shows it), its request, its accepted reply, whether it takes a dry run (every command, and
 * `replay`), and for a list verb (R59) the reply field holding its list.
 */
export type VerbContract = { kind: VerbKind; summary: string; request: z.ZodType; reply: z.ZodType; dryRun: boolean; list?: string };

/** The options of a verb's contract: its list field (a list verb, R59), and a dry run when it is not its kind's default. */
type ContractOptions = { list?: string; dryRun?: boolean };

/** One verb's contract, its `dryRun` and `list` as literal types (the client's DryRunVerb and ListVerb read them). */
type ContractOf<Kind extends VerbKind, Request extends z.ZodType, Reply extends z.ZodType, Options extends ContractOptions> = {
  kind: Kind; summary: string; request: Request; reply: Reply;
  dryRun: Options["dryRun"] extends boolean ? Options["dryRun"] : Kind extends "command" ? true : false;
} & (Options extends { list: infer List } ? { list: List } : unknown);

function contract<Kind extends VerbKind, Request extends z.ZodType, Reply extends z.ZodType, const Options extends ContractOptions = Record<never, never>>(
  kind: Kind, request: Request, reply: Reply, summary: string, options?: Options,
): ContractOf<Kind, Request, Reply, Options> {
  const list = options?.list;
  return { kind, summary, request, reply, dryRun: options?.dryRun ?? kind === "command", ...(list === undefined ? {} : { list }) } as ContractOf<Kind, Request, Reply, Options>;
}

/**
 * Every verb the controller answers, keyed by verb (the last token of its subject): the one list
 * of verbs. The server's registry (src/commands/index.ts) must have a definition for each command
 * and query here (its type says so), the controller's shell a handler for each shell verb; the
 * client (src/client) has a method for each, and the CLI a verb sending each (src/cli/verbs.ts,
 * test/unit/verbRegistry.test.ts). Adding a verb: its request and reply above, one line here.
 */
export const VERBS = {
  "node.enrol": contract("command", NodeEnrolRequest, NodeEnrolReply,
    "enrol a node with the public keys its host generated (`mesh host init`); its seed never leaves it"),
  "node.remove": contract("command", NodeRemoveRequest, NodeRemoveReply,
    "remove a node (its assignments, overlay place and credential go with it; every credential and provision delivered to it is replaced)"),
  "module.register": contract("command", ModuleRegisterRequest, ModuleRegisterReply,
    "register modules from their module.json files (declarers of seats first); each is tried and reported"),
  "module.issue": contract("command", ModuleIssueRequest, ModuleIssueReply,
    "mint a module's credential: until then its node's declaration leaves it out"),
  "module.retire": contract("command", ModuleRetireRequest, ModuleRetireReply,
    "retire a module: it leaves the catalogue and its credential is revoked (the next push drops it from the user list); refused while it is assigned; its history stays"),
  assign: contract("command", AssignRequest, AssignReply,
    "place a module on a node"),
  unassign: contract("command", UnassignRequest, UnassignReply,
    "take a module off a node"),
  "seat.alias": contract("command", SeatAliasRequest, SeatAliasReply,
    "rename a seat: lookups of <old> resolve to <new> (a cycle or a missing <new> is refused)"),
  "seat.handover": contract("command", SeatHandoverRequest, SeatHandoverReply,
    "move a seat from one holder node to another"),
  "overlay.place": contract("command", OverlayPlaceRequest, OverlayPlaceReply,
    "put a node on the overlay (one node may be the hub); credentials minted before keep their old address until rotated"),
  "credential.rotate": contract("command", CredentialRotateRequest, CredentialRotateReply,
    "replace a principal's key pair (a node's: the key `mesh host rotate-key` printed on it, --nkey; your own seed is kept beside your credential file, and mesh switches to it once the next push installs it: during that push if run from here, else at the first verb after it)"),
  where: contract("query", WhereRequest, WhereReply,
    "where every node is on the overlay", { list: "placed" }),
  seats: contract("query", SeatsRequest, SeatsReply,
    "every seat: declarer, protocol, holders", { list: "seats" }),
  nodes: contract("query", NodesRequest, NodesReply,
    "every node: overlay place, modules, its last report", { list: "nodes" }),
  modules: contract("query", ModulesRequest, ModulesReply,
    "every module: version, nodes, seats", { list: "modules" }),
  credentials: contract("query", CredentialsRequest, CredentialsReply,
    "every credential (never a secret)", { list: "credentials" }),
  history: contract("query", HistoryRequest, HistoryReply,
    "every event about one entity, wherever it was filed, with actor, command id and time"),
  pushes: contract("query", PushesRequest, PushesReply,
    "the newest pushes: when, by whom, the nodes each sent a declaration and the provisions it minted"),
  explain: contract("query", ExplainRequest, ExplainReply,
    "which manifest line and record allow a principal to pub or sub a subject, or why nothing does (exit 0 allowed and on the bus; 1 denied, or allowed but the principal has no credential yet, so it is not on the bus); without a subject, every grant it has"),
  push: contract("shell", PushRequest, PushReply,
    "compose every node's declaration from the records and send it to the named nodes and to every node whose last one differs; a node that cannot be composed is reported and gets nothing"),
  reports: contract("shell", ReportsRequest, ReportsReply,
    `each node's last report on the bus: what it applied, when, files found changed and written back; ${REPORTS_PAGE} a page`),
  replay: contract("shell", ReplayRequest, ReplayReply,
    "fold the records from sequence 1 ignoring snapshots, validate and report them; --void a commit that stops the fold; --accept-restore after a restore", { dryRun: true }),
} as const satisfies Record<string, VerbContract>;

/** A verb the controller answers. */
export type Verb = keyof typeof VERBS;

/** The verbs of one kind: `VerbOfKind<"command">` is every verb that appends through a decide. */
export type VerbOfKind<Kind extends VerbKind> = { [V in Verb]: (typeof VERBS)[V]["kind"] extends Kind ? V : never }[Verb];
/** A verb that changes the records through its decide (src/commands). */
export type CommandVerb = VerbOfKind<"command">;
/** A verb answered from the state (src/commands). */
export type QueryVerb = VerbOfKind<"query">;
/** A verb the controller's shell serves itself (push, reports, replay). */
export type ShellVerb = VerbOfKind<"shell">;
/** The list verbs (R59): their replies come a page at a time, the list in the field `list` names. */
export type ListVerb = { [V in Verb]: (typeof VERBS)[V] extends { list: string } ? V : never }[Verb];

/** Every verb, in the registry's order. */
export const VERB_NAMES = Object.keys(VERBS) as Verb[];

/** A verb's request as its schema parsed it (defaults filled in): what its decide, answer or handler reads. */
export type ParsedRequestOf<V extends Verb> = z.output<(typeof VERBS)[V]["request"]>;

/** The fields a verb's request carries (its input: defaults may be left out; `v` is stamped by the client). */
export type RequestOf<V extends Verb> = Omit<z.input<(typeof VERBS)[V]["request"]>, "v">;

/** A verb's accepted reply, parsed. */
export type ReplyOf<V extends Verb> = z.infer<(typeof VERBS)[V]["reply"]>;

/** A verb's reply body as its command file or handler builds it: the reply without the envelope the server adds. */
export type BodyOf<V extends Verb> = WithoutEnvelope<ReplyOf<V>>;

/** The envelope fields the server adds around a verb's body. */
type EnvelopeField = "ok" | "v" | "commandId" | "duplicate" | "unchanged" | "sequence" | "omitted" | "asOf" | "continue";
/** `T` without the envelope, member by member when `T` is a union (explain's two answers). */
type WithoutEnvelope<T> = T extends unknown ? Omit<T, EnvelopeField> : never;

/** Whether `verb` is one the controller answers. */
export function isVerb(verb: string): verb is Verb {
  return Object.hasOwn(VERBS, verb);
}
