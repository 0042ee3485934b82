/**
 * What `mesh up` asks of the controller to set up the example mesh, and what it says about the
 * push, apart from asking (issue 12). Pure: no bus, no files. up.ts reads the controller's answers,
 * hands them to these functions and sends the commands they return, in order.
 */
import type { PushReply, Verb } from "../contracts/verbs.ts";
import { serverLines } from "../push/serverLines.ts";
import { shortDigest } from "../contracts/declaration.ts";

/** The standard embedded address: the bus on this machine only. */
export const DEFAULT_UP_ADDRESS = "tls://127.0.0.1:4222";

/** One command `mesh up` sends as the operator: its verb (src/contracts/verbs.ts), its body, and the progress line said before it. */
export type UpCommand = { verb: Verb; body: Record<string, unknown>; line: string };

/**
 * The registrations the example mesh still needs: each manifest (in registration order: a seat's
 * declaring module before its users) whose module is not registered yet.
 */
export function planRegistrations(registered: ReadonlySet<string>, ordered: ReadonlyArray<{ manifest: { name: string } }>): UpCommand[] {
  return ordered.filter(({ manifest }) => !registered.has(manifest.name))
    .map(({ manifest }) => ({ verb: "module.register", body: { manifest }, line: `up: registering ${manifest.name}` }));
}

/** Per registered module, in the controller's order: issue it when it is not issued, then assign it to `node` when it is not on it. */
export function planIssueAndAssign(modules: ReadonlyArray<{ name: string; issued: boolean; nodes: readonly string[] }>, node: string): UpCommand[] {
  const commands: UpCommand[] = [];
  for (const module of modules) {
    if (!module.issued) commands.push({ verb: "module.issue", body: { module: module.name }, line: `up: issuing ${module.name}` });
    if (!module.nodes.includes(node)) commands.push({ verb: "assign", body: { module: module.name, node }, line: `up: assigning ${module.name} to ${node}` });
  }
  return commands;
}

/** The local node placed on the overlay as its hub, unless it is placed already (R7: it is the hub and the broker). */
export function planPlacement(nodes: ReadonlyArray<{ name: string; overlayName: string | null }>, node: string): UpCommand[] {
  const placed = nodes.find((n) => n.name === node);
  if (placed !== undefined && placed.overlayName !== null) return [];
  return [{ verb: "overlay.place", body: { node, hub: true }, line: `up: placing ${node} on the overlay as its hub` }];
}

/**
 * One line per node of a push report (`up: push: <node> <outcome> <digest> [: error]`), then the
 * controller's rotation, if any, then on a cluster each server's outcome of the user list as `mesh
 * push` says it (serverLines: a repaired server named so, a missed one with why, R60).
 */
export function pushLines(push: Pick<PushReply, "nodes" | "controllerRotation" | "servers">): string[] {
  const lines = push.nodes.map((n) => `up: push: ${n.node} ${n.outcome}${n.digest ? ` ${shortDigest(n.digest)}` : ""}${n.error ? `: ${n.error}` : ""}`);
  if (push.controllerRotation) lines.push(`up: push: the controller switched to its rotated key (${push.controllerRotation})`);
  lines.push(...serverLines(push.servers ?? []).map((line) => `up: push: ${line}`));
  return lines;
}

/** How the mesh in a folder was made (mesh.json and its genesis node, when it has one), for resumeRefusal. */
export type MadeMesh = { dir: string; genesisAddress: string; servers: number; node?: string };
/** What `mesh up` was asked for: `addressSource` names how the address was given (`--address`). */
export type AskedMesh = { brokerAddress?: string; addressSource?: string; node?: string; cluster?: number };

/**
 * Why `mesh up` must not resume the mesh `made` as `asked` (issue 29): `--address`, `--node` and
 * `--cluster` shape a mesh at genesis only, so one that differs from how the mesh was made would
 * be silently ignored. One line naming both values and the fix; undefined when nothing differs.
 */
export function resumeRefusal(made: MadeMesh, asked: AskedMesh): string | undefined {
  const fix = (flag: string, what: string) => `${flag} applies at genesis only: drop ${flag} to resume it, or give a new --dir for a mesh ${what}`;
  if (asked.brokerAddress !== undefined && asked.brokerAddress !== made.genesisAddress) {
    const source = asked.addressSource ?? "--address";
    return `up: ${source} ${asked.brokerAddress}: the mesh in ${made.dir} was made at ${made.genesisAddress}, and ${fix(source, `at ${asked.brokerAddress}`)}`;
  }
  if (asked.node !== undefined && made.node !== undefined && asked.node !== made.node) {
    return `up: --node ${asked.node}: the mesh in ${made.dir} was made with node ${made.node}, and ${fix("--node", `with node ${asked.node}`)}`;
  }
  if (asked.cluster !== undefined && asked.cluster !== made.servers) {
    return `up: --cluster ${asked.cluster}: the mesh in ${made.dir} runs ${made.servers} server${made.servers === 1 ? "" : "s"}, and ${fix("--cluster", `of ${asked.cluster}`)}`;
  }
  return undefined;
}
