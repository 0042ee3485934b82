import type { State } from "../projections/index.ts";
import { credentialOf, everyCredential, everyModule, moduleOf, resolveSeat, seatOf, type ModuleRecord } from "../projections/index.ts";
import {
  ALL_SUBJECTS, BUILD_SEAT, CATALOGUE_ERASE_SUBJECTS, CATALOGUE_STREAM, CATALOGUE_SUBJECTS, COMMAND_SUBJECTS, CONTROL_STREAM, CONTROL_SUBJECTS,
  CONTROLLER_NAME, EVENTS_STREAM, LOGS_SUBJECTS, commandSubjects, JS_API_SUBJECTS, REPORT_SUBJECTS, SHARED_INBOX_SUBJECTS, SNAPSHOT_BUCKET, CONTROLLER_LEASE_BUCKET,
  SNAPSHOT_OBJECTS, busUser, declarationConsumer, eventSubject, flowControlSubjects,
  followConsumer, inboxPrefix, inboxSubjects, kvStream, kvSubjects, MICRO_REQUEST_SUBJECTS, microServiceSubjects, objectStoreStream, objectStoreSubjects,
  logsSubject, pullGrants, reportSubject, streamUpdatedAdvisory, toolSubject, workConsumer, workStream, workSubject,
} from "../names.ts";
import { sortStrings } from "./sorting.ts";
import { toolUseOf, usedSeats } from "../manifest/manifest.ts";
import type { ComposeConfig, Direction, Grant, Permissions, Principal } from "./types.ts";

/**
 * Bus permissions derived per principal from the records and the manifests (DESIGN.md 5, R2, R4,
 * R15 to R20, R33). Deny by default: a principal is granted exactly the subjects listed here.
 *
 * - controller: serves commands (sub COMMAND_SUBJECTS), appends records (pub CATALOGUE_SUBJECTS),
 *   publishes declarations (pub CONTROL_SUBJECTS), hears reports (sub REPORT_SUBJECTS), raises
 *   streams and consumers (pub JS_API_SUBJECTS, the controller ONLY, minus CATALOGUE_ERASE_SUBJECTS:
 *   publishSide, R47: no delete, purge or configuration change of the records), hears when the
 *   records' configuration changes anyway (sub streamUpdatedAdvisory(CATALOGUE), R47), keeps its snapshot buckets
 *   (pub `$KV.<bucket>.>`, `$O.<bucket>.>` and those buckets' flow control), submits the work of
 *   the seats in `config.controllerSubmits` (R19; the submitting half only) and hears their
 *   outcome events named exactly (R15); answers the NATS services protocol for its own name
 *   (sub microServiceSubjects(CONTROLLER_NAME): `$SRV.PING`, `.INFO`, `.STATS`, each bare, with its
 *   name and with its name and an instance id); plus what its own module (`mesh-controller`, claiming
 *   `the-controller`) derives like any module (R20).
 * - operator: publishes commands under its own name only (`commandSubjects(user)`, R51), the
 *   tools of registered modules (named exactly), every node's logs subject (LOGS_SUBJECTS, R72),
 *   services-protocol requests (pub `$SRV.>`: standard NATS tooling finds the controller; the
 *   replies come to its own inbox), its inbox; hears the records and the reports as they are
 *   published (`mesh ... --watch`, issue 29).
 *   Nothing of `$JS`.
 * - node: the pull of its own CONTROL consumer (R2), its report subject, its own logs subject
 *   (subscribe; it answers on each operator's inbox, R72), its inbox. Holding
 *   mesh-broker adds nothing on the bus (the user list travels in its declaration).
 * - module: the pull of the consumers its manifest implies (R4): each claimed seat's shared work
 *   queue (R16), one consumer per follows entry (R18); publishes the work kinds of the seats it
 *   uses (submitting half only), the events of the seats it claims, and the subject of each tool
 *   of another module its `uses` names as `<module>/<tool>` (R74: exactly that tool; the answer
 *   comes back on its own inbox); subscribes its tools, and publishes its answers on the inbox of
 *   each operator and each module whose `uses` names one of them; its inbox.
 * - builder (a build machine's account): submits the work of the `mesh-build` role and hears its
 *   outcome events named exactly, its inbox. Nothing of `$JS`.
 *
 * Inboxes (R33): every principal subscribes only `_INBOX_<its user>.>` and its clients connect with
 * `inboxPrefix: inboxPrefix(user)`. Nobody subscribes to another's inbox, nobody gets `_INBOX.>`.
 *
 * Replies. The controller answers commands with explicit PUBLISH grants on the inbox of every
 * principal that may send it commands: every operator with a credential (controllerReplyInboxes).
 * Why not `allow_responses`: nats-server forgets which requests a connection may still answer when
 * it reloads its configuration, and a reconnected connection never knew; a push changes the user
 * list (a reload) and the R14 rotation push also reconnects the controller with its new key,
 * so the reply owed across them was refused ("Permissions Violation for Publish to _INBOX_..."). The
 * grant is named exactly per operator, so R33 holds: a reply still reaches only its asker's inbox,
 * which only the asker subscribes. The controller keeps no `allow_responses`: every principal that
 * can send it a request (commands, the tools of its own module) is an operator, so the grants cover
 * them all, and a requester they miss fails at once rather than only across a reload.
 * Nodes (answering `mesh logs`) and modules (answering their tools) get the same explicit grants
 * on the inboxes of exactly those who may ask them (addReplies), never `allow_responses`: with it
 * the server lets a responder publish once to whatever reply subject a request names, and the
 * asker names it, so a caller could aim an answer at the records or any subject (an attacker's trial).
 *
 * Seat names resolve through aliases at every lookup (R27).
 */

/** The bus user of a principal: its credential's user, the bootstrap user for a controller with none, else `<kind>-<name>`. */
export function userOf(state: State, principal: Principal): string {
  const credential = credentialOf(state.credentials, principal);
  if (credential) return credential.user;
  if (principal.kind === "controller" && state.mesh) return state.mesh.bootstrapUser;
  return busUser(principal.kind, principal.name);
}

/**
 * The inboxes the controller may publish its replies to: `_INBOX_<user>.>` of every operator with a
 * credential (the principals granted COMMAND_SUBJECTS), sorted. One function for composition and the
 * installer's carried list (R13, R15). Explicit grants, because a reload of the user list or a
 * reconnect forgets `allow_responses` (see the module comment). O(credentials).
 */
export function controllerReplyInboxes(state: State): string[] {
  const inboxes: string[] = [];
  for (const credential of everyCredential(state.credentials)) {
    if (credential.principal.kind === "operator") inboxes.push(inboxSubjects(credential.user));
  }
  return sortedUnique(inboxes);
}

/**
 * Where a derivation puts its grants. `explains` says whether it wants the reasons (`mesh explain`,
 * grantsOf) or the subjects alone: composing 50,000 users builds no reason (each is "").
 */
type Sink = { explains: boolean; add(direction: Direction, subject: string, because: string): void };

function pull(sink: Sink, stream: string, consumer: string, because: string): void {
  const subjects = pullGrants(stream, consumer).publish;
  for (let i = 0; i < subjects.length; i++) sink.add("pub", subjects[i]!, because);
}

function renamed(written: string, resolved: string): string {
  return written === resolved ? written : `${written} (now ${resolved})`;
}

/** Derives a module's manifest grants into `sink` (without its inbox); true when it answers requests (tools). */
function deriveModule(state: State, module: string, sink: Sink): string[] {
  const manifest = moduleOf(state.modules, module)?.manifest;
  if (!manifest) return [];
  const why = sink.explains;
  const line = why ? `manifest of ${module}` : "";
  for (const claim of manifest.claims) {
    const seat = resolveSeat(state.modules, claim);
    const record = seatOf(state.modules, seat);
    if (!record) continue;
    if (record.accepts.length > 0) {
      pull(sink, workStream(seat), workConsumer(seat),
        why ? `${line}: claims ${renamed(claim, seat)}, which accepts ${record.accepts.join(", ")} (R16: the queue shared by its holders)` : "");
    }
    for (const event of record.emits) {
      sink.add("pub", eventSubject(seat, event), why ? `${line}: claims ${renamed(claim, seat)}, which emits ${event}` : "");
    }
  }
  for (const use of usedSeats(manifest)) {
    const seat = resolveSeat(state.modules, use);
    const record = seatOf(state.modules, seat);
    if (!record) continue;
    for (const kind of record.accepts) {
      sink.add("pub", workSubject(seat, kind), why ? `${line}: uses ${renamed(use, seat)}, which accepts ${kind} (submitting half only)` : "");
    }
  }
  for (let i = 0; i < manifest.uses.length; i++) {
    const use = manifest.uses[i]!;
    const tool = toolUseOf(use);
    // R74: exactly the tool named, while its module offers it; `explain` names the line.
    if (tool === null || !offersTool(state, tool.module, tool.tool)) continue;
    sink.add("pub", toolSubject(tool.module, tool.tool), why ? `${line}: uses[${i}] "${use}": calls the tool ${tool.tool} of ${tool.module} (R74)` : "");
  }
  for (const follow of manifest.follows) {
    const seat = resolveSeat(state.modules, follow.seat);
    pull(sink, EVENTS_STREAM, followConsumer(module, seat, follow.event), why ? `${line}: follows ${renamed(follow.seat, seat)} ${follow.event} (R4, R18)` : "");
  }
  for (const tool of manifest.tools) {
    sink.add("sub", toolSubject(module, tool.name), why ? `${line}: offers the tool ${tool.name}` : "");
  }
  if (manifest.tools.length === 0) return [];
  // Its answers go to the inbox of each principal that may call its tools, named exactly (R74).
  const callers = toolCallersOf(state, module).map((caller) => inboxSubjects(userOf(state, { kind: "module", name: caller })));
  return addReplies(sink, [...operatorInboxes(state), ...callers], why ? `${line}: answers its tools' callers` : "");
}

/**
 * Adds the publish grants of a responder's answers (R33, R74): the inbox of every principal that
 * may ask it, each named exactly. Never allow_responses: with it the server lets a responder publish
 * to whatever reply subject the request names, and the asker chooses it, so a caller could aim the
 * answer at the records, a node's declaration, the JetStream API or another's command subject.
 * Returns the inboxes, sorted and unique.
 */
function addReplies(sink: Sink, inboxes: string[], because: string): string[] {
  const replies = sortedUnique(inboxes);
  for (const inbox of replies) sink.add("pub", inbox, because ? `${because} on the asker's own inbox ${inbox} (R33, R74: an explicit grant, never allow_responses)` : "");
  return replies;
}

/** Operators' inboxes by credentials slice: every responder answers operators (controllerReplyInboxes). */
const operatorInboxesMemo = new WeakMap<object, string[]>();
function operatorInboxes(state: State): string[] {
  let inboxes = operatorInboxesMemo.get(state.credentials);
  if (inboxes === undefined) {
    inboxes = controllerReplyInboxes(state);
    operatorInboxesMemo.set(state.credentials, inboxes);
  }
  return inboxes;
}

/** Modules whose `uses` names a tool a module offers, by that module; one pass per modules slice. */
const toolCallersMemo = new WeakMap<object, Map<string, string[]>>();
function toolCallersOf(state: State, module: string): string[] {
  let byModule = toolCallersMemo.get(state.modules);
  if (byModule === undefined) {
    byModule = new Map();
    for (const { manifest } of everyModule(state.modules)) {
      for (const use of manifest.uses) {
        const tool = toolUseOf(use);
        if (tool === null || !offersTool(state, tool.module, tool.tool)) continue;
        const callers = byModule.get(tool.module) ?? [];
        if (!callers.includes(manifest.name)) callers.push(manifest.name);
        byModule.set(tool.module, callers);
      }
    }
    toolCallersMemo.set(state.modules, byModule);
  }
  return byModule.get(module) ?? [];
}

/** Whether the registered `module` offers `tool` (R74: a use of a tool that went grants nothing). */
export function offersTool(state: State, module: string, tool: string): boolean {
  return moduleOf(state.modules, module)?.manifest.tools.some((t) => t.name === tool) ?? false;
}

/** A sink that keeps every grant with its reason. */
function explaining(grants: Grant[]): Sink {
  return { explains: true, add: (direction, subject, because) => grants.push({ direction, subject, because }) };
}

/** What a module's manifest implies on the bus, with reasons, without its inbox. */
export function moduleGrants(state: State, module: string): { grants: Grant[]; responder: boolean } {
  const grants: Grant[] = [];
  const responder = deriveModule(state, module, explaining(grants)).length > 0;
  return { grants, responder };
}

/** The submitting half of a seat (its work kinds) and its outcomes named exactly (R15, R19). */
function deriveSubmitter(state: State, seatName: string, sink: Sink, because: string): void {
  const seat = resolveSeat(state.modules, seatName);
  const record = seatOf(state.modules, seat);
  if (!record) return;
  const why = sink.explains;
  for (const kind of record.accepts) sink.add("pub", workSubject(seat, kind), why ? `${because}: ${renamed(seatName, seat)} accepts ${kind}` : "");
  for (const event of record.emits) sink.add("sub", eventSubject(seat, event), why ? `${because}: ${renamed(seatName, seat)} emits ${event}` : "");
}

/** What a derivation says besides its grants: whether it answers requests, its user, the inboxes it answers on. */
type Derived = { responder: boolean; user: string; replies: string[] };

/** Derives a principal's grants into `sink`; returns whether it answers requests, its user and its reply inboxes. */
function derive(state: State, principal: Principal, config: ComposeConfig, sink: Sink, user: string = userOf(state, principal)): Derived {
  let replies: string[] = [];
  const why = sink.explains;
  switch (principal.kind) {
    case "controller": {
      sink.add("sub", COMMAND_SUBJECTS, "controller: serves every principal's commands; the principal token is the asker, enforced by each principal's publish grant (R51)");
      sink.add("pub", CATALOGUE_SUBJECTS, "controller: appends commits to the records");
      sink.add("pub", CONTROL_SUBJECTS, "controller: publishes every node's declaration");
      sink.add("sub", REPORT_SUBJECTS, "controller: hears which declaration each node applied");
      sink.add("pub", JS_API_SUBJECTS, "controller: raises streams and consumers (the controller only, field notes)");
      sink.add("sub", streamUpdatedAdvisory(CATALOGUE_STREAM), "controller: hears when the records' configuration changes (R47: it serves nothing on records that erase commits)");
      sink.add("pub", kvSubjects(SNAPSHOT_BUCKET), "controller: writes its snapshot pointer");
      sink.add("pub", kvSubjects(CONTROLLER_LEASE_BUCKET), "controller: creates, renews and releases the controllers' lease (R61)");
      sink.add("pub", objectStoreSubjects(SNAPSHOT_OBJECTS), "controller: writes snapshot bodies");
      sink.add("pub", flowControlSubjects(kvStream(SNAPSHOT_BUCKET)), "controller: flow control of its snapshot pointer's ordered consumers");
      sink.add("pub", flowControlSubjects(objectStoreStream(SNAPSHOT_OBJECTS)), "controller: flow control of its snapshot reads");
      for (const subject of microServiceSubjects(CONTROLLER_NAME)) {
        sink.add("sub", subject, why ? `controller: answers the NATS services protocol on ${subject} (discovery: \`nats micro ls\` finds it)` : "");
      }
      for (const seat of config.controllerSubmits) deriveSubmitter(state, seat, sink, "controller configuration: submits to (R19)");
      const toolReplies = deriveModule(state, CONTROLLER_NAME, sink);
      replies = sortedUnique([...operatorInboxes(state), ...toolReplies]);
      for (const inbox of replies) {
        sink.add("pub", inbox, why ? `R33: answers the commands of its asker on the asker's own inbox ${inbox} (an explicit grant: a reload of the user list forgets allow_responses)` : "");
      }
      break;
    }
    case "operator":
      sink.add("pub", commandSubjects(user), why ? `operator: sends commands under its own name ${user} and no other's (R51: the bus says who asked)` : "");
      sink.add("pub", LOGS_SUBJECTS, why ? "operator: reads any module's output through its node's agent (`mesh logs`, R72)" : "");
      sink.add("pub", MICRO_REQUEST_SUBJECTS, why ? "operator: asks the NATS services protocol ($SRV PING, INFO, STATS: discovery); replies come to its own inbox" : "");
      // `mesh ... --watch` hears the mesh change as it happens (issue 29): what `mesh history` and
      // `mesh reports` answer anyway, heard instead of polled. Never a publish on either.
      sink.add("sub", CATALOGUE_SUBJECTS, "operator: hears the records as they are appended (mesh ... --watch)");
      sink.add("sub", REPORT_SUBJECTS, "operator: hears the nodes' reports as they are published (mesh ... --watch)");
      // Composing sorts the subjects after (sortedUnique): only `mesh explain` reads them in the
      // modules' order, and sorting 50,000 names cost more than the operator's grants themselves.
      for (const { manifest } of why ? sortedByName(everyModule(state.modules)) : everyModule(state.modules)) {
        for (const tool of manifest.tools) {
          sink.add("pub", toolSubject(manifest.name, tool.name), why ? `operator: may call the tool ${tool.name} of ${manifest.name} (manifest of ${manifest.name})` : "");
        }
      }
      break;
    case "node":
      pull(sink, CONTROL_STREAM, declarationConsumer(principal.name), why ? `node ${principal.name}: its own CONTROL consumer (R2, R22)` : "");
      sink.add("pub", reportSubject(principal.name), why ? `node ${principal.name}: reports what it applied` : "");
      sink.add("sub", logsSubject(principal.name), why ? `node ${principal.name}: answers \`mesh logs\` for its own modules (R72)` : "");
      replies = addReplies(sink, operatorInboxes(state), why ? `node ${principal.name}: answers \`mesh logs\`` : "");
      break;
    case "module":
      replies = deriveModule(state, principal.name, sink);
      break;
    case "builder":
      deriveSubmitter(state, BUILD_SEAT, sink, why ? `builder ${principal.name}: submits builds to` : "");
      break;
  }
  sink.add("sub", inboxSubjects(user), why ? `R33: the own inbox of ${user} (clients connect with inboxPrefix ${inboxPrefix(user)})` : "");
  return { responder: replies.length > 0, user, replies };
}

/**
 * Every grant of a principal with its provenance (the manifest line or record behind it), plus
 * whether it answers requests, its bus user and the inboxes it may publish replies to (the
 * controller's, controllerReplyInboxes; a node's and a tool module's, addReplies). For `mesh explain`.
 */
export function grantsOf(state: State, principal: Principal, config: ComposeConfig): { grants: Grant[] } & Derived {
  const grants: Grant[] = [];
  const derived = derive(state, principal, config, explaining(grants));
  return { grants, ...derived };
}

/** Module records by name, in place. */
function sortedByName(records: ModuleRecord[]): ModuleRecord[] {
  return records.sort((a, b) => (a.manifest.name < b.manifest.name ? -1 : a.manifest.name > b.manifest.name ? 1 : 0));
}

/** `values` sorted (sortStrings) with repeats dropped, in place. */
function sortedUnique(values: string[]): string[] {
  sortStrings(values);
  let kept = 0;
  for (let i = 0; i < values.length; i++) {
    if (kept === 0 || values[i] !== values[kept - 1]) values[kept++] = values[i]!;
  }
  if (kept < values.length) values.length = kept;
  return values;
}

/**
 * A principal's permissions (see the module comment): `{publish: {allow}, subscribe: {allow}}`,
 * sorted and deduplicated; nobody gets `allow_responses` (see addReplies).
 * Throws an Error when a derivation would grant `>`, `_INBOX.>`, a subscription on another
 * principal's inbox, or a publish on one other than the controller's reply grants (a bug, never a
 * record: mesh names cannot carry wildcards). `user` is the principal's bus user (userOf), passed
 * by a caller that holds its credential already (composeBusUsers). O(grants) per principal;
 * operators also O(tools of the catalogue), the controller also O(credentials).
 */
export function permissionsOf(state: State, principal: Principal, config: ComposeConfig, user: string = userOf(state, principal)): Permissions {
  const sink = new Subjects();
  const { replies } = derive(state, principal, config, sink, user);
  return checked({ publish: publishSide(sortedUnique(sink.pub)), subscribe: { allow: sortedUnique(sink.sub) } }, user, replies);
}

/**
 * A sink that keeps the subjects alone, by direction (permissionsOf). A class, not an object with
 * an arrow function: composing 50,000 users made a closure per user, and each was named when made.
 */
class Subjects implements Sink {
  readonly explains = false;
  readonly pub: string[] = [];
  readonly sub: string[] = [];
  add(direction: Direction, subject: string): void {
    (direction === "pub" ? this.pub : this.sub).push(subject);
  }
}

/**
 * Reduces grants to nats-server permissions, checking R33. `replies` are the inboxes the principal
 * may publish to (grantsOf's `replies`: the controller's reply grants; empty for everyone else).
 */
export function permissionsFromGrants(grants: readonly Grant[], user: string, replies: readonly string[] = []): Permissions {
  const by = (direction: Direction) => sortedUnique(grants.filter((g) => g.direction === direction).map((g) => g.subject));
  return checked({ publish: publishSide(by("pub")), subscribe: { allow: by("sub") } }, user, replies);
}

/**
 * The publish side: the allow list, plus a deny of the records' erasure API (R47) whenever the
 * allow list holds the JetStream API wildcard (the controller): nobody may delete, purge or
 * reconfigure CATALOGUE or delete one of its messages, the controller's own credential included.
 */
function publishSide(allow: string[]): Permissions["publish"] {
  return allow.includes(JS_API_SUBJECTS) ? { allow, deny: [...CATALOGUE_ERASE_SUBJECTS] } : { allow };
}

/** The reply grants of a principal that answers nobody: none. */
const NO_REPLIES: ReadonlySet<string> = new Set();

/**
 * The R33 guard. Nobody is granted `>` or `_INBOX.>`; nobody subscribes to an inbox but its own
 * (a reply carrying a fresh credential must reach only its asker). Publishing into another's inbox
 * is refused too, EXCEPT a responder's reply grants (`replies`: the controller's, a node's, a tool
 * module's): each names an asker's inbox exactly, and only that asker subscribes it.
 */
function checked(permissions: Permissions, user: string, replies: readonly string[]): Permissions {
  const own = inboxSubjects(user);
  const mayReplyTo: ReadonlySet<string> = replies.length === 0 ? NO_REPLIES : new Set(replies);
  for (const subject of permissions.subscribe.allow) {
    if (subject === ALL_SUBJECTS || subject === SHARED_INBOX_SUBJECTS || (subject.startsWith("_INBOX") && subject !== own)) refuse(user, subject, "subscribe");
  }
  for (const subject of permissions.publish.allow) {
    if (subject === ALL_SUBJECTS || subject === SHARED_INBOX_SUBJECTS) refuse(user, subject, "publish");
    if (subject.startsWith("_INBOX") && subject !== own && !mayReplyTo.has(subject)) refuse(user, subject, "publish");
  }
  return permissions;
}

/** Throws the R33 refusal of granting `user` `how` (publish, subscribe) on `subject`. */
function refuse(user: string, subject: string, how: string): never {
  throw new Error(`composition would grant ${user} ${how} on ${subject}: refused (R33)`);
}
