import { credentialEntries, credentialOf, everyModule, isEnrolled, moduleOf, nodeNames, nodesOfModule, type CredentialRecord, type ModuleRecord, type State } from "../projections/index.ts";
import { ALL_SUBJECTS, CONTROLLER_NAME, principalKey } from "../names.ts";
import { BOOTSTRAP_NKEY } from "../genesis.ts";
import { permissionsOf } from "./permissions.ts";
import { overlapNodesOf, previousAdmitted, type OverlapReports } from "./overlap.ts";
import type { BusUser, BusUsers, ComposeConfig, LeftOut, Permissions, Principal } from "./types.ts";

/**
 * The bus user list (R11, R12, R63): every principal that has a credential in the records, with the
 * credential's nkey public key and its derived permissions, never a hash or a secret; the
 * principal's name stays beside its key (`user`, written as a comment on its line). A credential
 * recorded before nkeys (a bcrypt hash, no key) is left out, named with the rotation that gives it
 * a key. A principal other than the controller recorded on the genesis bootstrap key (public,
 * R13: enrolled on it before enrolment refused it) is left out, named with what replaces it.
 * Principals that should be on the bus but have no credential are left out and
 * named: the controller before it recorded its own (R14), an enrolled node without one, an issued
 * module without one, an assigned module never issued. A second credential with a user already
 * taken is left out too (nats-server refuses duplicate users). A list with no users is refused
 * with code `user-list-empty`: that bus would refuse every connection of the mesh (R12).
 * R73: a module credential's previous key is listed too, as a second user of the same name and
 * permissions just before the current one, while its overlap holds by `reports` (each deciding
 * node's last report, compose/overlap.ts previousAdmitted; without them every overlap holds).
 * Users are sorted by user name; O(principals log principals), with no map or set of every
 * principal (composing 50,000 users spent more in them than in anything else of the list's own).
 */
export function composeBusUsers(state: State, config: ComposeConfig, reports?: OverlapReports): BusUsers {
  const leftOut: LeftOut[] = [];
  const credentials: CredentialRecord[] = [];
  // Counted to find who lacks a credential without looking every principal up (below).
  let nodesWith = 0;
  let modulesWith = 0;
  let controllerWith = false;
  for (const [, credential] of credentialEntries(state.credentials).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const { kind, name } = credential.principal;
    if (kind === "node" && isEnrolled(state.nodes, name)) nodesWith += 1;
    else if (kind === "module" && name !== CONTROLLER_NAME && needsCredential(state, moduleOf(state.modules, name))) modulesWith += 1;
    else if (kind === "controller" && name === CONTROLLER_NAME) controllerWith = true;
    credentials.push(credential);
  }
  // By user, the credentials of one user in key order (a stable sort, of a list its keys' order
  // nearly always sorts already): the first of them with a key takes the user; those before it hold
  // no key (recorded before nkeys), those after it are duplicates (nats-server refuses a user listed twice).
  if (!credentials.every((c, i) => i === 0 || compare(credentials[i - 1]!.user, c.user) <= 0)) credentials.sort((a, b) => compare(a.user, b.user));
  const users: BusUser[] = [];
  let owner: CredentialRecord | undefined;
  for (const credential of credentials) {
    if (owner !== undefined && owner.user === credential.user) {
      const { kind, name } = owner.principal;
      leftOut.push({ principal: credential.principal, reason: `its user ${credential.user} is already the user of ${principalKey(kind, name)}` });
      continue;
    }
    if (credential.nkey === BOOTSTRAP_NKEY && credential.principal.kind !== "controller") {
      // R13 R63: the bootstrap seed is public; only the controller dials with it, until its first rotation (R14).
      const { kind, name } = credential.principal;
      const fix = kind === "node" ? `\`mesh node remove ${name}\`, then enrol it again with the new keys \`mesh host init --force\` makes on it (R66: its old keys stay refused)` : `\`mesh credential rotate ${kind} ${name}\``;
      leftOut.push({ principal: credential.principal, reason: `its key is the genesis bootstrap key, whose seed is public in the source (R13): anyone could dial as it; ${fix}` });
      continue;
    }
    if (credential.nkey === undefined) {
      const { kind, name } = credential.principal;
      const fix = kind === "node" ? `\`mesh host rotate-key\` on the node, then \`mesh credential rotate node ${name} --nkey <its key>\`` : `\`mesh credential rotate ${kind} ${name}\``;
      leftOut.push({ principal: credential.principal, reason: `its credential was recorded before nkeys and holds no public key (R63): ${fix}` });
      continue;
    }
    owner = credential;
    const permissions = permissionsOf(state, credential.principal, config, credential.user);
    const previous = credential.previous;
    if (previous !== undefined && previous.nkey !== BOOTSTRAP_NKEY && previousAdmitted(state, credential, reports)) {
      const until = overlapNodesOf(state, credential);
      users.push({ user: credential.user, nkey: previous.nkey, permissions, principal: credential.principal, overlap: { rotatedAt: previous.rotatedAt, until } });
    }
    users.push({ user: credential.user, nkey: credential.nkey, permissions, principal: credential.principal });
  }
  // Each principal is looked up only when the counts say some lack a credential.
  if (!controllerWith) {
    leftOut.push({ principal: { kind: "controller", name: CONTROLLER_NAME }, reason: "the controller has recorded no credential yet (R14: it records its own at start)" });
  }
  const nodes = nodeNames(state.nodes);
  if (nodesWith < nodes.length) {
    for (const node of nodes) {
      if (!credentialOf(state.credentials, { kind: "node", name: node })) leftOut.push({ principal: { kind: "node", name: node }, reason: "enrolled node without a credential" });
    }
  }
  // In slot order: leftOut is sorted below, and sorting 50,000 names here cost more than the check.
  const needing = everyModule(state.modules).filter((record) => record.manifest.name !== CONTROLLER_NAME && needsCredential(state, record));
  if (modulesWith < needing.length) {
    for (const { manifest: { name }, issued } of needing) {
      const principal: Principal = { kind: "module", name };
      if (credentialOf(state.credentials, principal)) continue;
      if (issued) leftOut.push({ principal, reason: "issued module without a credential" });
      else leftOut.push({ principal, reason: "assigned but never issued: run `mesh module issue`" });
    }
  }
  leftOut.sort((a, b) => compare(principalKey(a.principal.kind, a.principal.name), principalKey(b.principal.kind, b.principal.name)));
  if (users.length === 0) {
    return {
      ok: false,
      refusal: { code: "user-list-empty", message: "the user list would have no users: that bus would refuse every connection in the mesh (R12); record the controller's credential first" },
      leftOut,
    };
  }
  return { ok: true, users, leftOut };
}

/** A module that should be on the bus: registered (`record`), and issued or assigned to a node. */
function needsCredential(state: State, record: ModuleRecord | undefined): boolean {
  return record !== undefined && (record.issued || nodesOfModule(state.assignments, record.manifest.name).length > 0);
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

const PLAIN = /^[A-Za-z0-9_.$>*\-:/+=]*$/;
/** A user name as its line's comment shows it: anything but these characters becomes `?`. */
const COMMENT_SAFE = /^[A-Za-z0-9_.-]*$/;

/**
 * The pieces of one line of the list, written by index into an array kept for every line: an
 * array emptied by `length = 0` gives up its room and grows again for each of 50,000 lines.
 */
type Line = { pieces: string[]; n: number; used: number };

function put(line: Line, text: string): void {
  line.pieces[line.n++] = text;
}

/** The line's text; the array is kept, its pieces past this line's emptied. */
function take(line: Line): string {
  for (let i = line.n; i < line.used; i++) line.pieces[i] = "";
  const text = line.pieces.join("");
  line.used = line.n;
  line.n = 0;
  return text;
}

/** Appends `[s1, s2, ...]`, each subject quoted: between double quotes when it has nothing to escape, else as JSON writes it. */
function putList(line: Line, subjects: readonly string[]): void {
  if (allPlain(subjects)) {
    // The usual case, in fewer pieces: `["`, s1, `", "`, s2, ..., `"]`.
    put(line, '["');
    for (let i = 0; i < subjects.length; i++) {
      if (i > 0) put(line, '", "');
      put(line, subjects[i]!);
    }
    put(line, '"]');
    return;
  }
  put(line, "[");
  for (let i = 0; i < subjects.length; i++) {
    if (i > 0) put(line, ", ");
    put(line, quote(subjects[i]!));
  }
  put(line, "]");
}

/** Whether every subject is written between double quotes as it is (a loop: `every` with an arrow made a closure per call). */
function allPlain(subjects: readonly string[]): boolean {
  for (let i = 0; i < subjects.length; i++) if (!PLAIN.test(subjects[i]!)) return false;
  return true;
}

function quote(text: string): string {
  return PLAIN.test(text) ? `"${text}"` : JSON.stringify(text);
}

/** A side that allows nothing: an explicit deny of everything (see putPermissions). */
const DENY_ALL = `{deny: [${quote(ALL_SUBJECTS)}]}`;

/** Appends one side of a user's permissions (see putPermissions). */
function putSide(line: Line, allow: readonly string[], deny: readonly string[] | undefined): void {
  if (allow.length === 0) {
    put(line, DENY_ALL);
    return;
  }
  put(line, "{allow: ");
  putList(line, allow);
  if (deny !== undefined && deny.length > 0) {
    put(line, ", deny: ");
    putList(line, deny);
  }
  put(line, "}");
}

/**
 * Appends a user's permissions, then the end of its entry: `{publish: ..., subscribe: ...}}`.
 * nats-server reads an empty allow list as "no restriction": a principal with nothing to publish
 * gets an explicit deny of everything instead (deny by default). allow_responses still lets a
 * responder answer the requests it received. A deny list (R47) narrows an allow wildcard:
 * nats-server lets a deny win over an allow.
 */
function putPermissions(line: Line, permissions: Permissions): void {
  put(line, "{publish: ");
  putSide(line, permissions.publish.allow, permissions.publish.deny);
  put(line, ", subscribe: ");
  putSide(line, permissions.subscribe.allow, undefined);
  put(line, permissions.allow_responses ? ", allow_responses: true}}  # " : "}}  # ");
}

/** R73: the comment line before a previous key's line: whose it is and which nodes' reports end it. */
function overlapComment(user: string, until: readonly string[]): string {
  const safe = (name: string) => (COMMENT_SAFE.test(name) ? name : name.replace(/[^A-Za-z0-9_.-]/g, "?"));
  return `    # R73: the previous key of ${safe(user)}, admitted until ${until.map(safe).join(", ")} report(s) the new one`;
}

/** The start of the user list's line naming the bus certificate's hosts (R71). */
const BUS_NAMES_PREFIX = "# bus certificate names (R71): ";

/**
 * The hosts a user list says the bus's certificate must name (renderUserList's `busNames`), or
 * undefined when it says none (a list composed before R71, or by a test). Pure.
 */
export function busNamesOfList(text: string): string[] | undefined {
  const start = text.indexOf(`\n${BUS_NAMES_PREFIX}`);
  if (start < 0) return undefined;
  const end = text.indexOf("\n", start + 1);
  return text.slice(start + 1 + BUS_NAMES_PREFIX.length, end < 0 ? undefined : end).split(" ").filter((name) => name.length > 0);
}

/**
 * The text of the bus's include file: a complete `authorization { users = [...] }` block, valid
 * on its own (`nats-server -t -c <file>`) and included by the bus's configuration with
 * `include "<file>"` at top level. Deterministic: the same users give the same bytes (users sorted
 * by name, subjects sorted, one user per line). Each user is `{nkey: "U...", permissions}` with
 * its name in a comment at the end of its line (readUserList, usersOfListText read it back): no
 * secret, no hash (R3, R63). Each line is written from one list of pieces, the subjects themselves
 * (not a string per side and per quoted subject: 50,000 users make a 20 MiB text).
 * `busNames` (busCertificateNames): the hosts the bus's certificate must name, in a comment line
 * (busNamesOfList reads it back) that the broker's holder renews the certificate by (R71).
 */
export function renderUserList(list: { users: readonly BusUser[]; busNames?: readonly string[] }): string {
  // composeBusUsers gives them sorted already: a copy is sorted only when they are not.
  const users = list.users.every((u, i) => i === 0 || compare(list.users[i - 1]!.user, u.user) <= 0)
    ? list.users
    : [...list.users].sort((a, b) => compare(a.user, b.user));
  const lines: string[] = [
    "# The bus user list, composed by mesh-controller from its records on every push (R11).",
    "# Do not edit: the next push replaces it.",
    ...(list.busNames ? [`${BUS_NAMES_PREFIX}${list.busNames.join(" ")}`] : []),
    "authorization {",
    "  users = [",
  ];
  const line: Line = { pieces: [], n: 0, used: 0 };
  for (const u of users) {
    if (u.overlap !== undefined) lines.push(overlapComment(u.user, u.overlap.until));
    if (PLAIN.test(u.nkey)) {
      put(line, '    {nkey: "');
      put(line, u.nkey);
      put(line, '", permissions: ');
    } else {
      put(line, "    {nkey: ");
      put(line, JSON.stringify(u.nkey));
      put(line, ", permissions: ");
    }
    putPermissions(line, u.permissions);
    put(line, COMMENT_SAFE.test(u.user) ? u.user : u.user.replace(/[^A-Za-z0-9_.-]/g, "?"));
    lines.push(take(line));
  }
  lines.push("  ]", "}", "");
  return lines.join("\n");
}
