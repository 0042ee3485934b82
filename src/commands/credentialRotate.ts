import { CredentialRotateRequest, type BodyOf } from "../contracts/verbs.ts";
import type { CredentialRotated, MeshEvent } from "../events/index.ts";
import { busAddressesOf, credentialOf, isEnrolled, moduleOf, type State } from "../projections/index.ts";
import { busUser } from "../names.ts";
import { command, metaOf, refuse, type Decision, type Envelope, type ReplyTools } from "./envelope.ts";
import { NO_MESH_MESSAGE, addressFor, nkeyInUse, refuseRetiredKey, secretAt } from "./shared.ts";

/**
 * Refusals, in order: `no-mesh` before genesis; `unknown-principal` for a node not enrolled or a
 * module not registered; `no-credential` when the principal has no credential (a module not yet
 * issued, a revoked one, or a controller, operator or builder never minted); `nkey-required`
 * (field nkey) for a node without `nkey` (its key is generated on the node, R64: the controller
 * cannot make one for it); `nkey-not-accepted` (field nkey) for any other kind with one (their keys
 * are minted by the controller, which keeps the seed sealed for them); `key-in-use` (field nkey)
 * when any recorded credential, the node's current one included, holds that key, or it is the
 * genesis bootstrap key, whose seed is public (nkeyInUse, R13); `key-retired` (field nkey) for a key
 * the records retired (rotated away, revoked, a removed node's: R66, refuseRetiredKey). Success:
 * CredentialRotated with the node's new `nkey` and no sealed secret, or fresh secret #1 (key and
 * mesh-sealed seed) for the other kinds, and the address `addressFor` gives now (R7), about
 * `node/<name>` or `module/<name>` for those kinds, else `<kind>/<name>`. The old public key is on
 * no list composed from then on (R50: the next push installs the list without it), but for a
 * module's: its rotation carries `overlap` (R73), so its old key stays admitted until its nodes
 * report the new one (compose/overlap.ts).
 */
export function decide(state: State, command: CredentialRotateRequest, envelope: Envelope): Decision {
  if (!state.mesh) return refuse("no-mesh", NO_MESH_MESSAGE);
  const principal = { kind: command.kind, name: command.name };
  if (command.kind === "node" && !isEnrolled(state.nodes, command.name)) {
    return refuse("unknown-principal", `no node "${command.name}" is enrolled`, "name");
  }
  if (command.kind === "module" && !moduleOf(state.modules, command.name)) {
    return refuse("unknown-principal", `no module "${command.name}" is registered`, "name");
  }
  if (!credentialOf(state.credentials, principal)) {
    const fix = command.kind === "module" ? `: run \`mesh module issue ${command.name}\` first` : "";
    return refuse("no-credential", `${command.kind} "${command.name}" has no credential to rotate${fix}`, "name");
  }
  if (command.kind === "node" && command.nkey === undefined) {
    return refuse("nkey-required", `node "${command.name}" generates its own key (R64): run \`mesh host rotate-key\` on it and pass the key it prints with --nkey`, "nkey");
  }
  if (command.kind !== "node" && command.nkey !== undefined) {
    return refuse("nkey-not-accepted", `a ${command.kind}'s key is minted by the controller: rotate without --nkey`, "nkey");
  }
  if (command.nkey !== undefined) {
    const taken = nkeyInUse(state, command.nkey);
    if (taken !== undefined) return refuse("key-in-use", `${taken}: \`mesh host rotate-key\` makes a new one`, "nkey");
    const retired = refuseRetiredKey(state, command.nkey, "nkey", `run \`mesh host rotate-key --force\` on node ${command.name} for a new key and rotate onto it (or \`mesh host init --force\` and enrol again)`);
    if (retired) return retired;
  }
  const fresh = command.nkey !== undefined ? { nkey: command.nkey } : (() => {
    const secret = secretAt(envelope, 0);
    return { nkey: secret.nkey, sealed: secret.sealed };
  })();
  return {
    ok: true,
    entity: { kind: command.kind, id: command.name },
    events: [
      {
        ...metaOf(envelope),
        type: "CredentialRotated",
        principal,
        user: busUser(command.kind, command.name),
        ...fresh,
        address: addressFor(state, principal),
        // R73: a running module keeps its old key until its node reports the new one.
        ...(command.kind === "module" ? { overlap: true as const } : {}),
      },
    ],
  };
}

/**
 * What `credential.rotate` answers: address, user, the new public key (`nkey`) and fingerprint; a
 * node already holds the new seed (it generated it, R64), so the reply carries no secret for it and
 * an offline node recovers by itself (its host tries its pending key when the old one is refused,
 * R50). An operator rotating its own credential gets its new seed itself (`seed`): a person's CLI has no
 * node key to seal to, the reply travels to the asker's own inbox alone (R33), and the CLI writes
 * it into the credential file it dialled with and never prints it (R3); without it the next push
 * would lock the operator out. Everyone else gets no secret: modules and the controller receive
 * theirs sealed, through their node's declaration or the controller's own records (R50).
 */
export type CredentialRotateReply = BodyOf<"credential.rotate">;

export function reply(state: State, events: readonly MeshEvent[], tools: ReplyTools): CredentialRotateReply {
  const rotated = events.find((e): e is CredentialRotated => e.type === "CredentialRotated");
  if (!rotated) throw new Error("credential.rotate reply: the commit has no CredentialRotated");
  const addresses = busAddressesOf(state, rotated.address);
  const credential: CredentialRotateReply["credential"] = {
    address: rotated.address,
    ...(addresses ? { addresses } : {}),
    user: rotated.user,
    nkey: rotated.nkey ?? "",
    fingerprint: state.mesh?.fingerprint ?? "",
  };
  if (rotated.principal.kind === "operator" && rotated.actor === rotated.user && rotated.sealed !== undefined) credential.seed = tools.openSecret(rotated.sealed);
  return { principal: rotated.principal, credential };
}

export const credentialRotate = command("credential.rotate", {
  secretsNeeded: (_state, command) => (command.kind === "node" ? 0 : 1),
  decide,
  reply,
});
