import type { State } from "../projections/index.ts";
import { credentialOf, resolveSeat, seatOf } from "../projections/index.ts";
import {
  ALL_SUBJECTS, BUILD_SEAT, CATALOGUE_SUBJECTS, COMMAND_SUBJECTS, CONTROL_STREAM, CONTROL_SUBJECTS,
  CONTROLLER_NAME, EVENTS_STREAM, JS_API_SUBJECTS, REPORT_SUBJECTS, SHARED_INBOX_SUBJECTS, SNAPSHOT_BUCKET,
  SNAPSHOT_OBJECTS, busUser, declarationConsumer, eventSubject, flowControlSubjects,
  followConsumer, inboxPrefix, inboxSubjects, kvStream, kvSubjects, objectStoreStream, objectStoreSubjects,
  pullGrants, reportSubject, toolSubject, workConsumer, workStream, workSubject,
} from "../names.ts";
import type { ComposeConfig, Direction, Grant, Permissions, Principal } from "./types.ts";

/**
 * Bus permissions derived per principal from the records and the manifests (DESIGN.md 5, R2, R4,
 * R15 to R20, R33). Deny by default: a principal is granted exactly the subjects listed here.
 *
 * - controller: serves commands (sub `mesh.command.>`), appends records (pub `mesh.catalogue.>`),
 *   publishes declarations (pub `mesh.declaration.>`), hears reports (sub `mesh.report.>`), raises
 *   streams and consumers (pub `$JS.API.>`, the controller ONLY), keeps its snapshot buckets
 *   (pub `$KV.<bucket>.>`, `$O.<bucket>.>` and those buckets' flow control), submits the work of
 *   the seats in `config.controllerSubmits` (R19; the submitting half only) and hears their
 *   outcome events named exactly (R15); plus what its own module (`mesh-controller`, claiming
 *   `the-controller`) derives like any module (R20).
 * - operator: publishes commands and the tools of registered modules (named exactly), its inbox.
 *   Nothing of `$JS`.
 * - node: the pull of its own CONTROL consumer (R2), its report subject, its inbox. Holding
 *   mesh-broker adds nothing on the bus (the user list travels in its declaration).
 * - module: the pull of the consumers its manifest implies (R4): each claimed seat's shared work
 *   queue (R16), one consumer per follows entry (R18); publishes the work kinds of the seats it
 *   uses (submitting half only), the events of the seats it claims; subscribes its tools; its inbox.
 * - builder (a build machine's account): submits the work of the `mesh-build` role and hears its
 *   outcome events named exactly, its inbox. Nothing of `$JS`.
 *
 * Inboxes (R33): every principal subscribes only `_INBOX_<its user>.>` and its clients connect with
 * `inboxPrefix: inboxPrefix(user)`. Responders (the controller answering commands, a module
 * answering its tools) get `allow_responses: true` instead of a publish grant on `_INBOX_*.>`: the
 * server then lets them publish exactly one reply to the reply subject of a request they received,
 * so no principal can write into an inbox it was not asked to answer.
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
 * Where a derivation puts its grants. Reasons are thunks: composing 50,000 users needs the subjects
 * only, and `mesh explain` asks for the words (grantsOf).
 */
type Sink = (direction: Direction, subject: string, because: () => string) => void;

function pull(add: Sink, stream: string, consumer: string, because: () => string): void {
  for (const subject of pullGrants(stream, consumer).publish) add("pub", subject, because);
}

function renamed(written: string, resolved: string): string {
  return written === resolved ? written : `${written} (now ${resolved})`;
}

/** Derives a module's manifest grants into `add` (without its inbox); true when it answers requests (tools). */
function deriveModule(state: State, module: string, add: Sink): boolean {
  const manifest = state.modules.modules[module]?.manifest;
  if (!manifest) return false;
  const line = `manifest of ${module}`;
  for (const claim of manifest.claims) {
    const seat = resolveSeat(state.modules, claim);
    const record = seatOf(state.modules, seat);
    if (!record) continue;
    if (record.accepts.length > 0) {
      pull(add, workStream(seat), workConsumer(seat),
        () => `${line}: claims ${renamed(claim, seat)}, which accepts ${record.accepts.join(", ")} (R16: the queue shared by its holders)`);
    }
    for (const event of record.emits) {
      add("pub", eventSubject(seat, event), () => `${line}: claims ${renamed(claim, seat)}, which emits ${event}`);
    }
  }
  for (const use of manifest.uses) {
    const seat = resolveSeat(state.modules, use);
    const record = seatOf(state.modules, seat);
    if (!record) continue;
    for (const kind of record.accepts) {
      add("pub", workSubject(seat, kind), () => `${line}: uses ${renamed(use, seat)}, which accepts ${kind} (submitting half only)`);
    }
  }
  for (const follow of manifest.follows) {
    const seat = resolveSeat(state.modules, follow.seat);
    pull(add, EVENTS_STREAM, followConsumer(module, seat, follow.event), () => `${line}: follows ${renamed(follow.seat, seat)} ${follow.event} (R4, R18)`);
  }
  for (const tool of manifest.tools) {
    add("sub", toolSubject(module, tool.name), () => `${line}: offers the tool ${tool.name}`);
  }
  return manifest.tools.length > 0;
}

/** What a module's manifest implies on the bus, with reasons, without its inbox. */
export function moduleGrants(state: State, module: string): { grants: Grant[]; responder: boolean } {
  const grants: Grant[] = [];
  const responder = deriveModule(state, module, (direction, subject, because) => grants.push({ direction, subject, because: because() }));
  return { grants, responder };
}

/** The submitting half of a seat (its work kinds) and its outcomes named exactly (R15, R19). */
function deriveSubmitter(state: State, seatName: string, add: Sink, because: string): void {
  const seat = resolveSeat(state.modules, seatName);
  const record = seatOf(state.modules, seat);
  if (!record) return;
  for (const kind of record.accepts) add("pub", workSubject(seat, kind), () => `${because}: ${renamed(seatName, seat)} accepts ${kind}`);
  for (const event of record.emits) add("sub", eventSubject(seat, event), () => `${because}: ${renamed(seatName, seat)} emits ${event}`);
}

/** Derives a principal's grants into `add`; returns whether it answers requests and its user. */
function derive(state: State, principal: Principal, config: ComposeConfig, add: Sink): { responder: boolean; user: string } {
  const user = userOf(state, principal);
  let responder = false;
  switch (principal.kind) {
    case "controller": {
      const fixed = (direction: Direction, subject: string, because: string) => add(direction, subject, () => because);
      fixed("sub", COMMAND_SUBJECTS, "controller: serves every command");
      fixed("pub", CATALOGUE_SUBJECTS, "controller: appends commits to the records");
      fixed("pub", CONTROL_SUBJECTS, "controller: publishes every node's declaration");
      fixed("sub", REPORT_SUBJECTS, "controller: hears which declaration each node applied");
      fixed("pub", JS_API_SUBJECTS, "controller: raises streams and consumers (the controller only, field notes)");
      fixed("pub", kvSubjects(SNAPSHOT_BUCKET), "controller: writes its snapshot pointer");
      fixed("pub", objectStoreSubjects(SNAPSHOT_OBJECTS), "controller: writes snapshot bodies");
      fixed("pub", flowControlSubjects(kvStream(SNAPSHOT_BUCKET)), "controller: flow control of its snapshot pointer's ordered consumers");
      fixed("pub", flowControlSubjects(objectStoreStream(SNAPSHOT_OBJECTS)), "controller: flow control of its snapshot reads");
      for (const seat of config.controllerSubmits) deriveSubmitter(state, seat, add, "controller configuration: submits to (R19)");
      deriveModule(state, CONTROLLER_NAME, add);
      responder = true;
      break;
    }
    case "operator":
      add("pub", COMMAND_SUBJECTS, () => "operator: sends commands");
      for (const name of Object.keys(state.modules.modules).sort()) {
        for (const tool of state.modules.modules[name]!.manifest.tools) {
          add("pub", toolSubject(name, tool.name), () => `operator: may call the tool ${tool.name} of ${name} (manifest of ${name})`);
        }
      }
      break;
    case "node":
      pull(add, CONTROL_STREAM, declarationConsumer(principal.name), () => `node ${principal.name}: its own CONTROL consumer (R2, R22)`);
      add("pub", reportSubject(principal.name), () => `node ${principal.name}: reports what it applied`);
      break;
    case "module":
      responder = deriveModule(state, principal.name, add);
      break;
    case "builder":
      deriveSubmitter(state, BUILD_SEAT, add, `builder ${principal.name}: submits builds to`);
      break;
  }
  add("sub", inboxSubjects(user), () => `R33: the own inbox of ${user} (clients connect with inboxPrefix ${inboxPrefix(user)})`);
  return { responder, user };
}

/**
 * Every grant of a principal with its provenance (the manifest line or record behind it), plus
 * whether it answers requests and its bus user. For `mesh explain`.
 */
export function grantsOf(state: State, principal: Principal, config: ComposeConfig): { grants: Grant[]; responder: boolean; user: string } {
  const grants: Grant[] = [];
  const { responder, user } = derive(state, principal, config, (direction, subject, because) => grants.push({ direction, subject, because: because() }));
  return { grants, responder, user };
}

function sortedUnique(values: string[]): string[] {
  values.sort();
  return values.filter((v, i) => i === 0 || v !== values[i - 1]);
}

/**
 * A principal's permissions (see the module comment): `{publish: {allow}, subscribe: {allow}}`,
 * sorted and deduplicated, with `allow_responses: true` for responders only. Throws an Error when a
 * derivation would grant `>`, `_INBOX.>` or another principal's inbox (a bug, never a record: mesh
 * names cannot carry wildcards). O(grants) per principal; operators also O(tools of the catalogue).
 */
export function permissionsOf(state: State, principal: Principal, config: ComposeConfig): Permissions {
  const pub: string[] = [];
  const sub: string[] = [];
  const { responder, user } = derive(state, principal, config, (direction, subject) => (direction === "pub" ? pub : sub).push(subject));
  return checked({ publish: { allow: sortedUnique(pub) }, subscribe: { allow: sortedUnique(sub) } }, responder, user);
}

/** Reduces grants to nats-server permissions, checking R33. */
export function permissionsFromGrants(grants: readonly Grant[], responder: boolean, user: string): Permissions {
  const by = (direction: Direction) => sortedUnique(grants.filter((g) => g.direction === direction).map((g) => g.subject));
  return checked({ publish: { allow: by("pub") }, subscribe: { allow: by("sub") } }, responder, user);
}

function checked(permissions: Permissions, responder: boolean, user: string): Permissions {
  if (responder) permissions.allow_responses = true;
  const own = inboxSubjects(user);
  for (const list of [permissions.publish.allow, permissions.subscribe.allow]) {
    for (const subject of list) {
      if (subject === ALL_SUBJECTS || subject === SHARED_INBOX_SUBJECTS || (subject.startsWith("_INBOX") && subject !== own)) {
        throw new Error(`composition would grant ${user} the subject ${subject}: refused (R33)`);
      }
    }
  }
  return permissions;
}
