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

function pull(stream: string, consumer: string, because: string): Grant[] {
  return pullGrants(stream, consumer).publish.map((subject) => ({ direction: "pub" as const, subject, because }));
}

function renamed(written: string, resolved: string): string {
  return written === resolved ? written : `${written} (now ${resolved})`;
}

/** What a module's manifest implies on the bus, without its inbox (the caller adds the right one). */
export function moduleGrants(state: State, module: string): { grants: Grant[]; responder: boolean } {
  const manifest = state.modules.modules[module]?.manifest;
  if (!manifest) return { grants: [], responder: false };
  const grants: Grant[] = [];
  const line = `manifest of ${module}`;
  for (const claim of manifest.claims) {
    const seat = resolveSeat(state.modules, claim);
    const record = seatOf(state.modules, seat);
    if (!record) continue;
    if (record.accepts.length > 0) {
      grants.push(...pull(workStream(seat), workConsumer(seat),
        `${line}: claims ${renamed(claim, seat)}, which accepts ${record.accepts.join(", ")} (R16: the queue shared by its holders)`));
    }
    for (const event of record.emits) {
      grants.push({ direction: "pub", subject: eventSubject(seat, event), because: `${line}: claims ${renamed(claim, seat)}, which emits ${event}` });
    }
  }
  for (const use of manifest.uses) {
    const seat = resolveSeat(state.modules, use);
    const record = seatOf(state.modules, seat);
    if (!record) continue;
    for (const kind of record.accepts) {
      grants.push({ direction: "pub", subject: workSubject(seat, kind), because: `${line}: uses ${renamed(use, seat)}, which accepts ${kind} (submitting half only)` });
    }
  }
  for (const follow of manifest.follows) {
    const seat = resolveSeat(state.modules, follow.seat);
    grants.push(...pull(EVENTS_STREAM, followConsumer(module, seat, follow.event),
      `${line}: follows ${renamed(follow.seat, seat)} ${follow.event} (R4, R18)`));
  }
  for (const tool of manifest.tools) {
    grants.push({ direction: "sub", subject: toolSubject(module, tool.name), because: `${line}: offers the tool ${tool.name}` });
  }
  return { grants, responder: manifest.tools.length > 0 };
}

/** The submitting half of a seat (its work kinds) and its outcomes named exactly (R15, R19). */
function submitterGrants(state: State, seatName: string, because: string): Grant[] {
  const seat = resolveSeat(state.modules, seatName);
  const record = seatOf(state.modules, seat);
  if (!record) return [];
  return [
    ...record.accepts.map((kind) => ({ direction: "pub" as const, subject: workSubject(seat, kind), because: `${because}: ${renamed(seatName, seat)} accepts ${kind}` })),
    ...record.emits.map((event) => ({ direction: "sub" as const, subject: eventSubject(seat, event), because: `${because}: ${renamed(seatName, seat)} emits ${event}` })),
  ];
}

/** Every tool subject of every registered module, named exactly, for operators. */
function everyToolGrant(state: State): Grant[] {
  const grants: Grant[] = [];
  for (const name of Object.keys(state.modules.modules).sort()) {
    for (const tool of state.modules.modules[name]!.manifest.tools) {
      grants.push({ direction: "pub", subject: toolSubject(name, tool.name), because: `operator: may call the tool ${tool.name} of ${name} (manifest of ${name})` });
    }
  }
  return grants;
}

/**
 * Every grant of a principal with its provenance, unsorted, plus whether it answers requests.
 * `cache` (optional) memoises what is shared between principals within one composition.
 */
export function grantsOf(
  state: State,
  principal: Principal,
  config: ComposeConfig,
  cache: { tools?: Grant[] } = {},
): { grants: Grant[]; responder: boolean; user: string } {
  const user = userOf(state, principal);
  const inbox: Grant = { direction: "sub", subject: inboxSubjects(user), because: `R33: the own inbox of ${user} (clients connect with inboxPrefix ${inboxPrefix(user)})` };
  switch (principal.kind) {
    case "controller": {
      const own = moduleGrants(state, CONTROLLER_NAME);
      const grants: Grant[] = [
        { direction: "sub", subject: COMMAND_SUBJECTS, because: "controller: serves every command" },
        { direction: "pub", subject: CATALOGUE_SUBJECTS, because: "controller: appends commits to the records" },
        { direction: "pub", subject: CONTROL_SUBJECTS, because: "controller: publishes every node's declaration" },
        { direction: "sub", subject: REPORT_SUBJECTS, because: "controller: hears which declaration each node applied" },
        { direction: "pub", subject: JS_API_SUBJECTS, because: "controller: raises streams and consumers (the controller only, field notes)" },
        { direction: "pub", subject: kvSubjects(SNAPSHOT_BUCKET), because: "controller: writes its snapshot pointer" },
        { direction: "pub", subject: objectStoreSubjects(SNAPSHOT_OBJECTS), because: "controller: writes snapshot bodies" },
        { direction: "pub", subject: flowControlSubjects(kvStream(SNAPSHOT_BUCKET)), because: "controller: flow control of its snapshot pointer's ordered consumers" },
        { direction: "pub", subject: flowControlSubjects(objectStoreStream(SNAPSHOT_OBJECTS)), because: "controller: flow control of its snapshot reads" },
        ...config.controllerSubmits.flatMap((seat) => submitterGrants(state, seat, "controller configuration: submits to (R19)")),
        ...own.grants,
        inbox,
      ];
      return { grants, responder: true, user };
    }
    case "operator":
      return {
        grants: [
          { direction: "pub", subject: COMMAND_SUBJECTS, because: "operator: sends commands" },
          ...(cache.tools ??= everyToolGrant(state)),
          inbox,
        ],
        responder: false,
        user,
      };
    case "node":
      return {
        grants: [
          ...pull(CONTROL_STREAM, declarationConsumer(principal.name), `node ${principal.name}: its own CONTROL consumer (R2, R22)`),
          { direction: "pub", subject: reportSubject(principal.name), because: `node ${principal.name}: reports what it applied` },
          inbox,
        ],
        responder: false,
        user,
      };
    case "module": {
      const own = moduleGrants(state, principal.name);
      return { grants: [...own.grants, inbox], responder: own.responder, user };
    }
    case "builder":
      return { grants: [...submitterGrants(state, BUILD_SEAT, `builder ${principal.name}: submits builds to`), inbox], responder: false, user };
  }
}

function sortedUnique(values: Iterable<string>): string[] {
  return [...new Set(values)].sort();
}

/**
 * A principal's permissions (see the module comment): `{publish: {allow}, subscribe: {allow}}`,
 * sorted and deduplicated, with `allow_responses: true` for responders only. Throws an Error when a
 * derivation would grant `>`, `_INBOX.>` or another principal's inbox (a bug, never a record: mesh
 * names cannot carry wildcards).
 */
export function permissionsOf(state: State, principal: Principal, config: ComposeConfig, cache: { tools?: Grant[] } = {}): Permissions {
  const { grants, responder, user } = grantsOf(state, principal, config, cache);
  return permissionsFromGrants(grants, responder, user);
}

/** Reduces grants to nats-server permissions, checking R33. */
export function permissionsFromGrants(grants: readonly Grant[], responder: boolean, user: string): Permissions {
  const by = (direction: Direction) => sortedUnique(grants.filter((g) => g.direction === direction).map((g) => g.subject));
  const permissions: Permissions = { publish: { allow: by("pub") }, subscribe: { allow: by("sub") } };
  if (responder) permissions.allow_responses = true;
  const own = inboxSubjects(user);
  for (const subject of [...permissions.publish.allow, ...permissions.subscribe.allow]) {
    if (subject === ALL_SUBJECTS || subject === SHARED_INBOX_SUBJECTS || (subject.startsWith("_INBOX") && subject !== own)) {
      throw new Error(`composition would grant ${user} the subject ${subject}: refused (R33)`);
    }
  }
  return permissions;
}

