import type { State } from "../projections/index.ts";
import { credentialOf } from "../projections/index.ts";
import { ALL_SUBJECTS, CONTROLLER_NAME, principalKey } from "../names.ts";
import { BOOTSTRAP_NKEY } from "../genesis.ts";
import { permissionsOf } from "./permissions.ts";
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
 * Users are sorted by user name; O(principals).
 */
export function composeBusUsers(state: State, config: ComposeConfig): BusUsers {
  const users: BusUser[] = [];
  const leftOut: LeftOut[] = [];
  const taken = new Map<string, string>();
  for (const key of Object.keys(state.credentials).sort()) {
    const credential = state.credentials[key]!;
    const owner = taken.get(credential.user);
    if (owner !== undefined) {
      leftOut.push({ principal: credential.principal, reason: `its user ${credential.user} is already the user of ${owner}` });
      continue;
    }
    if (credential.nkey === BOOTSTRAP_NKEY && credential.principal.kind !== "controller") {
      // R13 R63: the bootstrap seed is public; only the controller dials with it, until its first rotation (R14).
      const { kind, name } = credential.principal;
      const fix = kind === "node" ? `\`mesh node remove ${name}\`, then enrol it again with the key \`mesh host init\` makes` : `\`mesh credential rotate ${kind} ${name}\``;
      leftOut.push({ principal: credential.principal, reason: `its key is the genesis bootstrap key, whose seed is public in the source (R13): anyone could dial as it; ${fix}` });
      continue;
    }
    if (credential.nkey === undefined) {
      const { kind, name } = credential.principal;
      const fix = kind === "node" ? `\`mesh host rotate-key\` on the node, then \`mesh credential rotate node ${name} --nkey <its key>\`` : `\`mesh credential rotate ${kind} ${name}\``;
      leftOut.push({ principal: credential.principal, reason: `its credential was recorded before nkeys and holds no public key (R63): ${fix}` });
      continue;
    }
    taken.set(credential.user, key);
    users.push({
      user: credential.user,
      nkey: credential.nkey,
      permissions: permissionsOf(state, credential.principal, config),
      principal: credential.principal,
    });
  }
  const missing = (principal: Principal, reason: string) => {
    if (!credentialOf(state.credentials, principal)) leftOut.push({ principal, reason });
  };
  missing({ kind: "controller", name: CONTROLLER_NAME }, "the controller has recorded no credential yet (R14: it records its own at start)");
  for (const node of Object.keys(state.nodes).sort()) missing({ kind: "node", name: node }, "enrolled node without a credential");
  for (const name of Object.keys(state.modules.modules).sort()) {
    const record = state.modules.modules[name]!;
    if (name === CONTROLLER_NAME) continue;
    if (record.issued) missing({ kind: "module", name }, "issued module without a credential");
    else if (state.assignments.byModule[name]?.length) missing({ kind: "module", name }, "assigned but never issued: run `mesh module issue`");
  }
  leftOut.sort((a, b) => compare(principalKey(a.principal.kind, a.principal.name), principalKey(b.principal.kind, b.principal.name)));
  users.sort((a, b) => compare(a.user, b.user));
  if (users.length === 0) {
    return {
      ok: false,
      refusal: { code: "user-list-empty", message: "the user list would have no users: that bus would refuse every connection in the mesh (R12); record the controller's credential first" },
      leftOut,
    };
  }
  return { ok: true, users, leftOut };
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

const PLAIN = /^[A-Za-z0-9_.$>*\-:/+=]*$/;
function quote(text: string): string {
  return PLAIN.test(text) ? `"${text}"` : JSON.stringify(text);
}

function list(subjects: readonly string[]): string {
  return `[${subjects.map(quote).join(", ")}]`;
}

function renderPermissions(permissions: Permissions): string {
  // nats-server reads an empty allow list as "no restriction": a principal with nothing to
  // publish gets an explicit deny of everything instead (deny by default). allow_responses still
  // lets a responder answer the requests it received.
  // A deny list (R47) narrows an allow wildcard: nats-server lets a deny win over an allow.
  const side = (allow: readonly string[], deny: readonly string[] = []) =>
    allow.length > 0 ? `{allow: ${list(allow)}${deny.length > 0 ? `, deny: ${list(deny)}` : ""}}` : `{deny: ${list([ALL_SUBJECTS])}}`;
  const parts = [`publish: ${side(permissions.publish.allow, permissions.publish.deny)}`, `subscribe: ${side(permissions.subscribe.allow)}`];
  if (permissions.allow_responses) parts.push("allow_responses: true");
  return `{${parts.join(", ")}}`;
}

/**
 * The text of the bus's include file: a complete `authorization { users = [...] }` block, valid
 * on its own (`nats-server -t -c <file>`) and included by the bus's configuration with
 * `include "<file>"` at top level. Deterministic: the same users give the same bytes (users sorted
 * by name, subjects sorted, one user per line). Each user is `{nkey: "U...", permissions}` with
 * its name in a comment at the end of its line (readUserList, usersOfListText read it back): no
 * secret, no hash (R3, R63).
 */
export function renderUserList(list: { users: readonly BusUser[] }): string {
  const lines = [...list.users]
    .sort((a, b) => compare(a.user, b.user))
    .map((u) => `    {nkey: ${quote(u.nkey)}, permissions: ${renderPermissions(u.permissions)}}  # ${u.user.replace(/[^A-Za-z0-9_.-]/g, "?")}`);
  return [
    "# The bus user list, composed by mesh-controller from its records on every push (R11).",
    "# Do not edit: the next push replaces it.",
    "authorization {",
    "  users = [",
    ...lines,
    "  ]",
    "}",
    "",
  ].join("\n");
}
