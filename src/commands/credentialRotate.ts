import { CredentialRotateRequest, type BodyOf } from "../contracts/verbs.ts";
import type { CredentialRotated, MeshEvent } from "../events/index.ts";
import { busAddressesOf, credentialOf, type State } from "../projections/index.ts";
import { busUser } from "../names.ts";
import { metaOf, refuse, type CommandDefinition, type Decision, type Envelope, type ReplyTools } from "./envelope.ts";
import { NO_MESH_MESSAGE, addressFor, secretAt } from "./shared.ts";

/**
 * Refusals, in order: `no-mesh` before genesis; `unknown-principal` for a node not enrolled or a
 * module not registered; `no-credential` when the principal has no credential (a module not yet
 * issued, a revoked one, or a controller, operator or builder never minted). Success:
 * CredentialRotated with fresh secret #1 and the address `addressFor` gives now (R7), about
 * `node/<name>` or `module/<name>` for those kinds, else `<kind>/<name>`.
 */
export function decide(state: State, command: CredentialRotateRequest, envelope: Envelope): Decision {
  if (!state.mesh) return refuse("no-mesh", NO_MESH_MESSAGE);
  const principal = { kind: command.kind, name: command.name };
  if (command.kind === "node" && !state.nodes[command.name]) {
    return refuse("unknown-principal", `no node "${command.name}" is enrolled`, "name");
  }
  if (command.kind === "module" && !state.modules.modules[command.name]) {
    return refuse("unknown-principal", `no module "${command.name}" is registered`, "name");
  }
  if (!credentialOf(state.credentials, principal)) {
    const fix = command.kind === "module" ? `: run \`mesh module issue ${command.name}\` first` : "";
    return refuse("no-credential", `${command.kind} "${command.name}" has no credential to rotate${fix}`, "name");
  }
  const secret = secretAt(envelope, 0);
  return {
    ok: true,
    entity: { kind: command.kind, id: command.name },
    events: [
      {
        ...metaOf(envelope),
        type: "CredentialRotated",
        principal,
        user: busUser(command.kind, command.name),
        hash: secret.hash,
        sealed: secret.sealed,
        address: addressFor(state, principal),
      },
    ],
  };
}

/**
 * What `credential.rotate` answers: address, user and fingerprint; for a node, also the new
 * password sealed to the node's public key (an offline node recovers with it, R50). An operator
 * rotating its own credential gets its new password itself (`password`): a person's CLI has no
 * node key to seal to, the reply travels to the asker's own inbox alone (R33), and the CLI writes
 * it into the credential file it dialled with and never prints it (R3); without it the next push
 * would lock the operator out. Everyone else gets no password: modules and the controller receive
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
    fingerprint: state.mesh?.fingerprint ?? "",
  };
  const node = rotated.principal.kind === "node" ? state.nodes[rotated.principal.name] : undefined;
  if (node) credential.sealedPassword = tools.sealToNode(node.publicKey, tools.openSecret(rotated.sealed));
  if (rotated.principal.kind === "operator" && rotated.actor === rotated.user) credential.password = tools.openSecret(rotated.sealed);
  return { principal: rotated.principal, credential };
}

export const credentialRotate: CommandDefinition<typeof CredentialRotateRequest> = {
  kind: "command",
  verb: "credential.rotate",
  summary: "rotate a principal's credential: a fresh secret at the current address",
  schema: CredentialRotateRequest,
  secretsNeeded: () => 1,
  decide,
  reply,
};
