import { ModuleIssueRequest, type BodyOf } from "../contracts/verbs.ts";
import type { CredentialMinted, MeshEvent } from "../events/index.ts";
import { busAddressesOf, moduleOf, type State } from "../projections/index.ts";
import { busUser } from "../names.ts";
import { command, metaOf, refuse, type Decision, type Envelope } from "./envelope.ts";
import { NO_MESH_MESSAGE, addressFor, secretAt } from "./shared.ts";

/**
 * Refuses `no-mesh` before genesis, `unknown-module` for a module not registered, and
 * `already-issued` for a module issued before: a second issue would silently replace a working
 * credential, so replacing one is `credential.rotate`'s job, said out loud.
 * A module's key (R63, R64) is minted here, by the controller, and its seed travels sealed to the
 * node(s) it is assigned to in their declarations, as secrets always have: a module has no machine
 * of its own, moves between nodes (a handover, an unassignment, R48) and may run on two at once, so
 * a key generated on one host would have to be re-enrolled at every move, and a module issued
 * before any assignment would have no key at all; the seed stays out of every event and reply (R3).
 * Success, about `module/<module>`: ModuleIssued and CredentialMinted for principal
 * `module:<module>`, user `busUser("module", module)`, fresh secret #1, and the address
 * `addressFor` gives (R7): the broker as every node the module is assigned to reaches it, or the
 * genesis address while it is unassigned (or its nodes disagree), since the genesis address is the
 * one every machine can dial. Placing nodes on the overlay later does not move it (R10).
 */
export function decide(state: State, command: ModuleIssueRequest, envelope: Envelope): Decision {
  if (!state.mesh) return refuse("no-mesh", NO_MESH_MESSAGE);
  const module = moduleOf(state.modules, command.module);
  if (!module) {
    return refuse("unknown-module", `no module "${command.module}" is registered: run \`mesh module register\` first`, "module");
  }
  if (module.issued) {
    return refuse("already-issued", `module "${command.module}" is already issued: use \`mesh credential rotate module ${command.module}\` for a new credential`, "module");
  }
  const secret = secretAt(envelope, 0);
  const meta = metaOf(envelope);
  const principal = { kind: "module" as const, name: command.module };
  return {
    ok: true,
    entity: { kind: "module", id: command.module },
    events: [
      { ...meta, type: "ModuleIssued", module: command.module },
      {
        ...meta,
        type: "CredentialMinted",
        principal,
        user: busUser("module", command.module),
        nkey: secret.nkey,
        sealed: secret.sealed,
        address: addressFor(state, principal),
      },
    ],
  };
}

/**
 * What `module.issue` answers: the module's user, address and fingerprint. No seed: the
 * module receives it, sealed, in its node's declaration (R3, R64).
 */
export type ModuleIssueReply = BodyOf<"module.issue">;

export function reply(state: State, events: readonly MeshEvent[]): ModuleIssueReply {
  const minted = events.find((e): e is CredentialMinted => e.type === "CredentialMinted");
  if (!minted) throw new Error("module.issue reply: the commit has no CredentialMinted");
  const addresses = busAddressesOf(state, minted.address);
  return {
    module: minted.principal.name,
    credential: { address: minted.address, ...(addresses ? { addresses } : {}), user: minted.user, fingerprint: state.mesh?.fingerprint ?? "" },
  };
}

export const moduleIssue = command("module.issue", {
  secretsNeeded: () => 1,
  decide,
  reply,
});
