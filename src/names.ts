/**
 * Every subject, stream, consumer, bucket and inbox name of the mesh (DESIGN.md section 5).
 *
 * This is the only module that spells one. Callers that subscribe and callers that grant use the
 * same function, so the two cannot drift apart (R18). Pure: no I/O, no clock.
 */

/** A name usable as one subject token and as a DNS label: lowercase, digits, dashes; 1..63 chars. */
export const NAME_PATTERN = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/** Returns null when `name` is a valid mesh name, else the reason, for error messages. */
export function nameProblem(name: string): string | null {
  if (NAME_PATTERN.test(name)) return null;
  return `"${name}" is not a mesh name: use 1 to 63 lowercase letters, digits and dashes, starting and ending with a letter or digit`;
}

// ---- records (section 4) ----------------------------------------------------------------------

export const CATALOGUE_STREAM = "CATALOGUE";
/** Subjects the CATALOGUE stream captures. */
export const CATALOGUE_SUBJECTS = "mesh.catalogue.>";

/** The subject of a commit about one entity: `mesh.catalogue.<kind>.<id>`. */
export function catalogueSubject(entityKind: string, entityId: string): string {
  return `mesh.catalogue.${entityKind}.${entityId}`;
}

/** KV bucket holding the pointer to the newest snapshot (its sequence and object name). */
export const SNAPSHOT_BUCKET = "MESH_SNAPSHOT";
/** KV bucket of the controllers' lease: which controller is active (R61). */
export const CONTROLLER_LEASE_BUCKET = "MESH_CONTROLLER_LEASE";
/** KV key of the lease in CONTROLLER_LEASE_BUCKET. */
export const CONTROLLER_LEASE_KEY = "active";
/** Object store bucket holding snapshot bodies, chunked by the object store. */
export const SNAPSHOT_OBJECTS = "MESH_SNAPSHOTS";
/** KV key of the newest snapshot pointer. */
export const SNAPSHOT_POINTER_KEY = "latest";
/** Object name of the snapshot taken at `sequence`. */
export function snapshotObject(sequence: number): string {
  return `state-${sequence}`;
}

// ---- declarations ---------------------------------------------------------------------------

export const CONTROL_STREAM = "CONTROL";

/** JetStream's API prefix when no domain or prefix is set (what @nats-io/jetstream defaults to). */
export const DEFAULT_JS_API_PREFIX = "$JS.API";

/**
 * The JetStream API subject listing a stream's consumer names (no infos), under `apiPrefix`:
 * `<apiPrefix>.CONSUMER.NAMES.<stream>` (the client library has no call for it).
 */
export function consumerNamesApi(apiPrefix: string, stream: string): string {
  return `${apiPrefix}.CONSUMER.NAMES.${stream}`;
}
/** Subjects the CONTROL stream captures: every node's declaration and user-list parts. */
export const CONTROL_SUBJECTS = "mesh.declaration.>";

/**
 * The subject a node's declarations are published on: `mesh.declaration.<node>.declaration`.
 * Every subject of one node is under `declarationFilter(node)`; CONTROL keeps the latest message
 * per subject.
 */
export function declarationSubject(node: string): string {
  return `mesh.declaration.${node}.declaration`;
}

/**
 * The subject of part `index` (0-based) of the user list sent to a node holding mesh-broker:
 * `mesh.declaration.<node>.users.<index>`. A list far over the bus's largest message (1 MiB by
 * default; ~22 MiB at 10,000 nodes) travels in parts; the declaration names the list by digest
 * and part count.
 */
export function userListPartSubject(node: string, index: number): string {
  return `mesh.declaration.${node}.users.${index}`;
}

/** Every user-list part subject of one node: `mesh.declaration.<node>.users.>` (push purges the stale ones). */
export function userListPartsFilter(node: string): string {
  return `mesh.declaration.${node}.users.>`;
}

/** Whether `subject` is one of `node`'s user-list part subjects (userListPartSubject), by its prefix. */
export function isUserListPartOf(subject: string, node: string): boolean {
  const prefix = userListPartsFilter(node).slice(0, -1);
  return subject.startsWith(prefix) && subject.length > prefix.length;
}

/**
 * The one filter of a node's CONTROL consumer: `mesh.declaration.<node>.>`, its declaration and
 * its user-list parts and nothing of any other node's (R22; names are single tokens, no dots).
 */
export function declarationFilter(node: string): string {
  return `mesh.declaration.${node}.>`;
}

/** The durable pull consumer a node binds on CONTROL, filtered on declarationFilter(node) alone (R22). */
export function declarationConsumer(node: string): string {
  return `node-${node}`;
}

/** Header of a user-list part: the digest of the whole list it belongs to (hex). */
export const USER_LIST_DIGEST_HEADER = "Mesh-User-List-Digest";
/** Header of a user-list part: `<index>/<count>`, index 0-based. */
export const USER_LIST_PART_HEADER = "Mesh-User-List-Part";

// ---- work queues (R16, R20) --------------------------------------------------------------------

/**
 * The work-queue stream of a seat that accepts work. Stream names are upper-case by convention.
 * Injective (R52): mesh names are lowercase and hold no `_`, so upper-casing and `-` to `_` lose nothing.
 */
export function workStream(seat: string): string {
  return `WORK_${seat.toUpperCase().replace(/-/g, "_")}`;
}

/** Every subject of a seat's work queue: `mesh.work.<seat>.>`. */
export function workStreamSubjects(seat: string): string {
  return `mesh.work.${seat}.>`;
}

/** The subject work of one kind is submitted on: `mesh.work.<seat>.<kind>`. */
export function workSubject(seat: string, kind: string): string {
  return `mesh.work.${seat}.${kind}`;
}

/** The one durable pull consumer shared by every holder of a seat (R16). */
export function workConsumer(seat: string): string {
  return `holders-${seat}`;
}

// ---- events (R18) -------------------------------------------------------------------------------

export const EVENTS_STREAM = "EVENTS";
export const EVENTS_SUBJECTS = "mesh.event.>";

/** The only way to build an event subject: `mesh.event.<emitter seat>.<event>` (R18). */
export function eventSubject(emitter: string, event: string): string {
  return `mesh.event.${emitter}.${event}`;
}

/**
 * The durable pull consumer delivering one followed event to one module (R4):
 * `follow_<module>_<emitter>_<event>`. Joined with `_`, which a mesh name cannot hold, so two
 * (module, emitter, event) triples never share a consumer (R52; the earlier `-` join gave
 * `pay-ledger` following `audit/entry` and `pay` following `ledger-audit/entry` one consumer).
 * Consumers raised under the old `follow-...` names are left on EVENTS, no longer granted to anyone.
 */
export function followConsumer(module: string, emitter: string, event: string): string {
  return `follow_${module}_${emitter}_${event}`;
}

// ---- commands, tools, reports ----------------------------------------------------------------------

const COMMAND_PREFIX = "mesh.command.";

/** A principal token of a command subject: one subject token, no wildcard, no whitespace. */
const PRINCIPAL_TOKEN = /^[^\s.*>]+$/;

/**
 * The subject of one command `verb` asked by the bus user `principal`:
 * `mesh.command.<principal>.<verb>` (R51; a verb may contain dots, `node.enrol`). The principal
 * token is the asker's bus user: each principal may publish only under its own name, so the
 * server, not the message, says who asked. The CLI and every client send on it; the controller's
 * subscription (COMMAND_SUBJECTS), composition's grants (commandSubjects) and `explain` use the
 * same construction. Throws an Error when `principal` is not one subject token (a bug, never input:
 * bus users are mesh names).
 */
export function commandSubject(principal: string, verb: string): string {
  if (!PRINCIPAL_TOKEN.test(principal)) throw new Error(`"${principal}" cannot be the principal token of a command subject (R51)`);
  return `${COMMAND_PREFIX}${principal}.${verb}`;
}
/** Every command subject a principal may publish, its own and no one else's: `mesh.command.<principal>.>` (R51). */
export function commandSubjects(principal: string): string {
  return commandSubject(principal, ">");
}
/** Every principal's command subjects, for the controller's subscription and grant: `mesh.command.*.>` (R51). */
export const COMMAND_SUBJECTS = `${COMMAND_PREFIX}*.>`;
/**
 * The asker and the verb of a command subject (`mesh.command.<principal>.<verb>`), or null when
 * the subject is not one (no principal token or no verb). The inverse of commandSubject.
 */
export function commandOfSubject(subject: string): { principal: string; verb: string } | null {
  if (!subject.startsWith(COMMAND_PREFIX)) return null;
  const rest = subject.slice(COMMAND_PREFIX.length);
  const dot = rest.indexOf(".");
  if (dot <= 0 || dot === rest.length - 1) return null;
  const principal = rest.slice(0, dot);
  if (!PRINCIPAL_TOKEN.test(principal)) return null;
  return { principal, verb: rest.slice(dot + 1) };
}
/** Queue group the controllers serve commands in, so a second one can stand by. */
export const COMMAND_QUEUE = "controllers";

/** A module's tool: `mesh.tool.<module>.<tool>`. */
export function toolSubject(module: string, tool: string): string {
  return `mesh.tool.${module}.${tool}`;
}

/** Where a node reports the declaration it applied: `mesh.report.<node>`. */
export function reportSubject(node: string): string {
  return `mesh.report.${node}`;
}
export const REPORT_SUBJECTS = "mesh.report.>";
/**
 * Where a node's agent answers questions for its modules' output (`mesh logs`, R72):
 * `mesh.logs.<node>`. Only the node subscribes to its own; only operators publish (LOGS_SUBJECTS).
 */
export function logsSubject(node: string): string {
  return `mesh.logs.${node}`;
}
/** Every node's logs subject, what operators may ask on (R72). */
export const LOGS_SUBJECTS = logsSubject("*");
/** The node a report subject names (the inverse of reportSubject), or null when it is not one. */
export function nodeOfReportSubject(subject: string): string | null {
  const prefix = reportSubject("");
  return subject.startsWith(prefix) && subject.length > prefix.length ? subject.slice(prefix.length) : null;
}
/**
 * Stream keeping each node's latest report (max one per subject), so `push --wait` still sees a
 * report published while the controller was reconnecting (a user-list reload drops it).
 */
export const REPORTS_STREAM = "REPORTS";

// ---- JetStream API subjects a principal is granted (R2) ------------------------------------------

/** The three subjects a principal needs to pull its own consumer, and no one else's (R2). */
export function pullGrants(stream: string, consumer: string): { publish: string[] } {
  return {
    publish: [
      `$JS.API.CONSUMER.INFO.${stream}.${consumer}`,
      `$JS.API.CONSUMER.MSG.NEXT.${stream}.${consumer}`,
      `$JS.ACK.${stream}.${consumer}.>`,
    ],
  };
}

/** Delivery subject of a push consumer: `_DELIVER.<consumer>` (R2). */
export function deliverSubject(consumer: string): string {
  return `_DELIVER.${consumer}`;
}

/** Flow-control replies of a push consumer: `$JS.FC.<stream>.<consumer>.>`. */
export function flowControlSubject(stream: string, consumer: string): string {
  return `$JS.FC.${stream}.${consumer}.>`;
}

// ---- inboxes (R33) ------------------------------------------------------------------------------------

/** A principal's own reply inbox prefix: `_INBOX_<user>` (clients pass it as `inboxPrefix`). */
export function inboxPrefix(user: string): string {
  return `_INBOX_${user}`;
}
/** Every subject of a principal's inbox: `_INBOX_<user>.>`. */
export function inboxSubjects(user: string): string {
  return `${inboxPrefix(user)}.>`;
}
/**
 * Where the controller publishes one push's progress lines for its asker: `_INBOX_<user>.progress.<id>`,
 * inside the asker's own inbox (R33), so only the asker can read them. `id` is one subject token.
 */
export function progressSubject(user: string, id: string): string {
  return `${inboxPrefix(user)}.progress.${id}`;
}

// ---- principals and users --------------------------------------------------------------------------

export const PRINCIPAL_KINDS = ["controller", "operator", "node", "module", "builder"] as const;
export type PrincipalKind = (typeof PRINCIPAL_KINDS)[number];

/** The bus user of a principal: `<kind>-<name>`, unique across kinds (R52: kinds hold no dash, so the first dash ends the kind). */
export function busUser(kind: PrincipalKind, name: string): string {
  return `${kind}-${name}`;
}

/**
 * Every kind of entity a commit is filed under (`mesh.catalogue.<kind>.<id>`): the genesis record
 * (`mesh`), seats, pushes and every principal kind. `mesh history` accepts these and no other.
 */
export const ENTITY_KINDS = ["mesh", "seat", "push", ...PRINCIPAL_KINDS] as const;
export type EntityKind = (typeof ENTITY_KINDS)[number];

/**
 * The entity the records' own commits are filed under (R44, R45: a voided commit, an accepted
 * restore): `mesh.catalogue.mesh.records`.
 */
export const RECORDS_ENTITY = { kind: "mesh", id: "records" } as const;

/** The key a principal's credential is filed under in the records: `<kind>:<name>`. */
export function principalKey(kind: PrincipalKind, name: string): string {
  return `${kind}:${name}`;
}

/** The controller's own principal name; its seat is `the-controller` (R28). */
export const CONTROLLER_NAME = "mesh-controller";
export const CONTROLLER_SEAT = "the-controller";
export const BROKER_SEAT = "mesh-broker";
export const STORE_SEAT = "mesh-store";

/** A node's name on the overlay: `<node>.internal`. */
export function overlayName(node: string): string {
  return `${node}.internal`;
}

// ---- names added for composition (issue 4) --------------------------------------------------------

/** The role of build machines: builders submit its work and hear its outcomes. */
export const BUILD_SEAT = "mesh-build";

/** Every subject the controller serves or a principal may be granted on the JetStream API. Controller only (field notes). */
export const JS_API_SUBJECTS = "$JS.API.>";

/**
 * The JetStream API subjects that would erase the records (R47): deleting the CATALOGUE stream,
 * purging it, deleting one of its messages, and changing its configuration (a limit, max_msgs,
 * max_bytes, max_age or per subject, erases the oldest commits at once and with every append
 * after). Denied to every principal that holds JS_API_SUBJECTS (a deny wins over an allow in
 * nats-server), so not even the controller's credential erases them. Creating CATALOGUE stays
 * granted (genesis does it): the server refuses to create a stream again with another
 * configuration, so a create cannot change it either.
 */
export const CATALOGUE_ERASE_SUBJECTS: readonly string[] = [
  `${DEFAULT_JS_API_PREFIX}.STREAM.DELETE.${CATALOGUE_STREAM}`,
  `${DEFAULT_JS_API_PREFIX}.STREAM.MSG.DELETE.${CATALOGUE_STREAM}`,
  `${DEFAULT_JS_API_PREFIX}.STREAM.PURGE.${CATALOGUE_STREAM}`,
  `${DEFAULT_JS_API_PREFIX}.STREAM.UPDATE.${CATALOGUE_STREAM}`,
];

/**
 * Where the server announces that a stream's configuration changed: `$JS.EVENT.ADVISORY.STREAM.UPDATED.<stream>`.
 * The controller listens on CATALOGUE's (R47): a change made outside the mesh's credentials (which
 * may not make one) is seen while it serves, before its next append, not only at its next start.
 */
export function streamUpdatedAdvisory(stream: string): string {
  return `$JS.EVENT.ADVISORY.STREAM.UPDATED.${stream}`;
}

/** Flow-control replies of every push consumer of one stream (ordered consumers have random names). */
export function flowControlSubjects(stream: string): string {
  return `$JS.FC.${stream}.>`;
}

/** The stream behind a KV bucket: `KV_<bucket>`. */
export function kvStream(bucket: string): string {
  return `KV_${bucket}`;
}
/** Every key subject of a KV bucket: `$KV.<bucket>.>`. */
export function kvSubjects(bucket: string): string {
  return `$KV.${bucket}.>`;
}
/** The stream behind an object store bucket: `OBJ_<bucket>`. */
export function objectStoreStream(bucket: string): string {
  return `OBJ_${bucket}`;
}
/** Every chunk and meta subject of an object store bucket: `$O.<bucket>.>`. */
export function objectStoreSubjects(bucket: string): string {
  return `$O.${bucket}.>`;
}

/**
 * Subjects no principal is ever granted (R33): everything, and the shared default inbox. Spelled
 * here so composition can refuse them and tests can try them.
 */
export const ALL_SUBJECTS = ">";
export const SHARED_INBOX_SUBJECTS = "_INBOX.>";

// ---- discovery: the NATS services protocol ("micro", ADR-32) ------------------------------------

/** The services protocol's monitoring verbs, in the order the protocol lists them. */
export const MICRO_VERBS = ["PING", "INFO", "STATS"] as const;
export type MicroVerb = (typeof MICRO_VERBS)[number];

/** Every services-protocol request subject, `$SRV.>`: what an operator may ask (standard NATS tooling). */
export const MICRO_REQUEST_SUBJECTS = "$SRV.>";

/**
 * One monitoring subject of the services protocol: `$SRV.<verb>` (every service answers),
 * `$SRV.<verb>.<name>` (every instance of one service), `$SRV.<verb>.<name>.<id>` (one instance).
 * Throws an Error when `id` is given without `name` (a bug: the protocol has no such subject).
 */
export function microSubject(verb: MicroVerb | "*", name?: string, id?: string): string {
  if (id !== undefined && name === undefined) throw new Error("a services-protocol subject names the service before its instance id");
  return ["$SRV", verb, ...(name === undefined ? [] : [name]), ...(id === undefined ? [] : [id])].join(".");
}

/**
 * What one service subscribes to answer the protocol, for every verb: `$SRV.<verb>`,
 * `$SRV.<verb>.<name>` and `$SRV.<verb>.<name>.*` (its instance ids), for its grant.
 */
export function microServiceSubjects(name: string): string[] {
  return MICRO_VERBS.flatMap((verb) => [microSubject(verb), microSubject(verb, name), microSubject(verb, name, "*")]);
}

/** The subject the controller's endpoint of one verb answers, any asker: `mesh.command.*.<verb>` (R51). */
export function commandEndpointSubject(verb: string): string {
  return `${COMMAND_PREFIX}*.${verb}`;
}

/** Levenshtein distance between two words. Pure. */
function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = row;
  }
  return previous[b.length]!;
}

/**
 * The candidate nearest `word` (fewest edits, the first on a tie), or undefined when none is close
 * (more than a third of the word's letters, at least 2, would have to change). Pure.
 */
export function closestName(word: string, candidates: readonly string[]): string | undefined {
  let best: { name: string; d: number } | undefined;
  for (const name of candidates) {
    const d = distance(word, name);
    if (best === undefined || d < best.d) best = { name, d };
  }
  return best !== undefined && best.d <= Math.max(2, Math.floor(word.length / 3)) ? best.name : undefined;
}
