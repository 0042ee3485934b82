import { readFileSync } from "node:fs";
import { packageFile } from "../src/files/index.ts";
import { z } from "zod";
import type { BusUser, ComposeConfig, Permissions } from "../src/compose/types.ts";
import { controllerReplyInboxes, permissionsOf } from "../src/compose/permissions.ts";
import { CONTROLLER_NAME } from "../src/names.ts";
import { BOOTSTRAP_NKEY, BOOTSTRAP_USER } from "../src/genesis.ts";
import { everyCredential, type State } from "../src/projections/index.ts";

/**
 * The first user list the installer carries (R13): the controller's account at the well-known
 * genesis key (BOOTSTRAP_SEED's public key) with the permissions of installer/controller-permissions.json plus its reply
 * grants on the carried operators' inboxes (R15: a test holds composition's derivation to that),
 * the first operator's account, and the genesis node's when genesis names one (R56).
 */

/** The template file, beside this module. */
export const CONTROLLER_PERMISSIONS_FILE = packageFile("installer", "controller-permissions.json");

const Template = z.object({
  controllerSubmits: z.array(z.string()).default([]),
  publish: z.object({ allow: z.array(z.string()), deny: z.array(z.string()).optional() }),
  subscribe: z.object({ allow: z.array(z.string()) }),
  allow_responses: z.boolean().optional(),
});

/**
 * The static part of the controller's carried permissions: installer/controller-permissions.json,
 * validated, in nats-server's shape (R15). It names no operator: the reply grants on operators'
 * inboxes depend on the records (carriedControllerPermissions adds them). Throws when the file is
 * missing or malformed.
 */
export function controllerTemplatePermissions(file = CONTROLLER_PERMISSIONS_FILE): Permissions {
  const raw = JSON.parse(readFileSync(file, "utf8")) as unknown;
  const parsed = Template.parse(raw);
  const permissions: Permissions = {
    publish: { allow: [...parsed.publish.allow].sort(), ...(parsed.publish.deny ? { deny: [...parsed.publish.deny].sort() } : {}) },
    subscribe: { allow: [...parsed.subscribe.allow].sort() },
  };
  if (parsed.allow_responses) permissions.allow_responses = true;
  return permissions;
}

/**
 * The controller's permissions as the installer carries them for `state` (the state folded from
 * the genesis commit): the template (controllerTemplatePermissions) plus a PUBLISH grant on the
 * inbox of every operator of `state`, built by composition's own controllerReplyInboxes (R15: one
 * function for both). Those grants let the controller's replies survive a reload of the user list
 * and its reconnect with a rotated key (R14), which forget allow_responses (R33). Throws as
 * controllerTemplatePermissions.
 */
export function carriedControllerPermissions(state: State, file = CONTROLLER_PERMISSIONS_FILE): Permissions {
  const template = controllerTemplatePermissions(file);
  const publish = [...new Set([...template.publish.allow, ...controllerReplyInboxes(state)])].sort();
  return { ...template, publish: { ...template.publish, allow: publish } };
}

/**
 * The seats the carried template was derived for (R19): the controller's configuration written at
 * genesis states the same list (MESH_CONTROLLER_SUBMITS), so the template and the derivation agree.
 */
export const CARRIED_CONTROLLER_SUBMITS: readonly string[] = Template.parse(
  JSON.parse(readFileSync(CONTROLLER_PERMISSIONS_FILE, "utf8")),
).controllerSubmits;

/** Composition settings at genesis (R19). */
export const GENESIS_COMPOSE_CONFIG: ComposeConfig = { controllerSubmits: CARRIED_CONTROLLER_SUBMITS };

/**
 * The carried user list: the controller at the genesis key (BOOTSTRAP_NKEY) with the
 * carried permissions (the template and its reply grants on `state`'s operators), and every operator
 * and node of the genesis state (the genesis node, R56) with its derived permissions and recorded public key. `state` is the state folded from the genesis commit.
 */
export function carriedUsers(state: State, config: ComposeConfig = GENESIS_COMPOSE_CONFIG): BusUser[] {
  const users: BusUser[] = [
    {
      user: BOOTSTRAP_USER,
      nkey: BOOTSTRAP_NKEY,
      permissions: carriedControllerPermissions(state),
      principal: { kind: "controller", name: CONTROLLER_NAME },
    },
  ];
  for (const credential of everyCredential(state.credentials)) {
    // The first operator, and the genesis node (R56): its agent must dial the bus to receive the
    // first composed list, so its account is carried as the controller's is (R13).
    if (credential.principal.kind !== "operator" && credential.principal.kind !== "node") continue;
    if (credential.nkey === undefined) continue;
    users.push({
      user: credential.user,
      nkey: credential.nkey,
      permissions: permissionsOf(state, credential.principal, config),
      principal: credential.principal,
    });
  }
  return users;
}

/**
 * One user as a user-list file carries it: its name, its nkey public key (or, a user from before
 * nkeys, its bcrypt hash as `password`: never a password) and the permissions.
 */
export type ListedUser = { user: string; nkey?: string; password?: string; permissions: Permissions };

/**
 * Reads a user-list include file as renderUserList writes it (one user per line) back into data:
 * the installer's real output for the R15 test, and the users on the bus for `mesh up`'s summary.
 * Lines that are not a user are skipped. Throws when a user line does not parse.
 */
export function readUserList(text: string): ListedUser[] {
  const users: ListedUser[] = [];
  for (const line of text.split("\n")) {
    // An nkey user's line ends with `# <name>` (renderUserList): the name is read from there.
    const named = /^(.*\})\s*#\s*(\S+)\s*$/.exec(line.trim());
    const trimmed = (named ? named[1]! : line.trim()).replace(/,$/, "");
    if (!trimmed.startsWith("{user:") && !trimmed.startsWith("{nkey:")) continue;
    // nats-server's syntax here is JSON with bare keys: quote them.
    const json = trimmed.replace(/([{,]\s*)([A-Za-z_]+):/g, '$1"$2":');
    const raw = JSON.parse(json) as { user?: string; nkey?: string; password?: string; permissions: Record<string, unknown> };
    const side = (value: unknown): { allow: string[]; deny?: string[] } => {
      const v = value as { allow?: string[]; deny?: string[] } | undefined;
      // A deny beside an allow list is the R47 guard; a deny alone is renderUserList's "nothing".
      return { allow: v?.allow ? [...v.allow] : [], ...(v?.allow && v.deny ? { deny: [...v.deny] } : {}) };
    };
    const permissions: Permissions = { publish: side(raw.permissions.publish), subscribe: side(raw.permissions.subscribe) };
    if (raw.permissions.allow_responses === true) permissions.allow_responses = true;
    const user = raw.user ?? named?.[2] ?? raw.nkey ?? "";
    users.push({ user, ...(raw.nkey !== undefined ? { nkey: raw.nkey } : {}), ...(raw.password !== undefined ? { password: raw.password } : {}), permissions });
  }
  return users;
}
