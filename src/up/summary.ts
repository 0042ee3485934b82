import type { CredentialView, LastReport, NodeView, SeatView } from "../contracts/verbs.ts";
import { shortDigest } from "../contracts/declaration.ts";
import { moduleRunsText, type ModuleRun } from "../contracts/report.ts";
/**
 * What `mesh up` and `mesh status` print: the nodes, who holds each seat, the users on the bus and
 * what each node applied. Pure: built from the controller's query replies, the user-list file and
 * the host's record of what it applied; rendered to lines. Never a password or a hash (R3).
 */

export type UpSummary = {
  /** `servers`: a cluster's servers, in order (issue 14); absent on one server. */
  mesh: { genesisAddress: string; fingerprint: string; dir: string; servers?: Array<{ name: string; address: string }> };
  nodes: Array<{ name: string; overlayName: string | null; hub: boolean; modules: string[]; credentialAddress: string | null; lastSent: string | null }>;
  seats: Array<{ name: string; protocol: string; holders: string[]; accepts: string[] }>;
  /** The users of the bus's user-list file, with the principal of each when the records know it. */
  busUsers: Array<{ user: string; principal: string | null; publishes: number; subscribes: number }>;
  /** The user-list file is not on this machine (it is on the broker's): `busUsers` is empty, not "no users". */
  busUsersElsewhere?: boolean;
  /**
   * What each node last applied: the local host's record (its files), else the node's last report
   * on the bus (R55: `reportedAt`, and `drift` when a re-check wrote files back).
   */
  applied: Array<{ node: string; digest: string | null; ok: boolean; files: string[]; error?: string; reportedAt?: string; drift?: string[]; modules?: ModuleRun[] }>;
  /** Processes of the embedded default and their pids (null: not running). */
  processes: Record<string, number | null>;
};

const dash = (value: unknown) => (value === null || value === undefined || value === "" ? "-" : String(value));

function table(rows: readonly string[][], header: readonly string[]): string[] {
  if (rows.length === 0) return ["  (none)"];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) => `  ${cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join("  ")}`.trimEnd();
  return [line(header), ...rows.map(line)];
}

/** The summary as lines a person reads. */
export function renderSummary(summary: UpSummary): string[] {
  const lines: string[] = [];
  lines.push(`mesh at ${summary.mesh.genesisAddress} (certificate ${summary.mesh.fingerprint})${summary.mesh.dir ? `, records in ${summary.mesh.dir}` : ""}`);
  if (summary.mesh.servers) lines.push(`bus servers: ${summary.mesh.servers.map((s) => `${s.name} ${s.address}`).join(", ")}`);
  const processes = Object.entries(summary.processes).map(([name, pid]) => `${name} ${pid === null ? "stopped" : `pid ${pid}`}`);
  if (processes.length > 0) lines.push(`processes: ${processes.join(", ")}`);
  lines.push("", "nodes:");
  lines.push(...table(
    summary.nodes.map((n) => [n.name, dash(n.overlayName) + (n.hub ? " (hub)" : ""), dash(n.credentialAddress), n.modules.join(",") || "-"]),
    ["NODE", "OVERLAY", "ADDRESS", "MODULES"],
  ));
  lines.push("", "seats:");
  lines.push(...table(
    summary.seats.map((s) => [s.name, s.protocol === "" ? "(marker)" : s.protocol, s.holders.join(",") || "(nobody)", s.accepts.join(",") || "-"]),
    ["SEAT", "PROTOCOL", "HELD BY", "ACCEPTS"],
  ));
  lines.push("", "users on the bus:");
  if (summary.busUsersElsewhere === true) lines.push("  (the installed list is on the broker's machine; `mesh credentials` lists the principals)");
  else lines.push(...table(
    summary.busUsers.map((u) => [u.user, dash(u.principal), `${u.publishes} publish, ${u.subscribes} subscribe`]),
    ["USER", "PRINCIPAL", "GRANTS"],
  ));
  lines.push("", "applied:");
  lines.push(...table(
    summary.applied.map((a) => [a.node, a.digest ? shortDigest(a.digest) : "-", appliedText(a), moduleRunsText(a.modules)]),
    ["NODE", "DECLARATION", "RESULT", "MODULES RUN (R72)"],
  ));
  return lines;
}

function appliedText(a: UpSummary["applied"][number]): string {
  const drift = a.drift?.length ? `, ${a.drift.length} drifted file(s) written back` : "";
  if (!a.ok) return `NOT APPLIED: ${dash(a.error)}`;
  const files = a.files.length > 0 ? `, ${a.files.length} files` : "";
  return a.reportedAt === undefined ? `ok${files || ", 0 files"}${drift}` : `ok${files}, reported ${a.reportedAt}${drift}`;
}

/** A node's last report as the `reports` verb gives it (src/contracts/verbs.ts LastReport). */
export type NodeLastReport = LastReport;

/**
 * What each node applied (R55), pure: the local node from its host's own record (`local`: its
 * name and `owned.json`), every other node from its last report on the bus; a report of another
 * digest than the one last sent, or none, is "NOT APPLIED" saying which.
 */
export function appliedOf(
  nodes: UpSummary["nodes"],
  reports: readonly NodeLastReport[],
  local: { node: string; digest: string; files: readonly string[] } | null,
): UpSummary["applied"] {
  const byNode = new Map(reports.map((r) => [r.node, r]));
  // R72: what each node runs, as its last report says, beside what it applied.
  return appliedRows(nodes, byNode, local).map((a) => {
    const modules = byNode.get(a.node)?.modules;
    return modules === undefined ? a : { ...a, modules: [...modules] };
  });
}

/** appliedOf's rows without the run states. */
function appliedRows(
  nodes: UpSummary["nodes"],
  byNode: ReadonlyMap<string, NodeLastReport>,
  local: { node: string; digest: string; files: readonly string[] } | null,
): UpSummary["applied"] {
  return nodes.map((n) => {
    const report = byNode.get(n.name);
    const seen = report ? { reportedAt: report.at, ...(report.drift?.length ? { drift: [...report.drift] } : {}) } : {};
    if (local && n.name === local.node) {
      // The bus's time of its report of this very declaration: when it was applied (R55).
      const at = report?.ok === true && report.digest === local.digest ? { reportedAt: report.at } : {};
      const behind = n.lastSent !== null && local.digest !== n.lastSent;
      return {
        node: n.name, digest: local.digest, ok: !behind, files: [...local.files], ...at, ...(report?.drift?.length ? { drift: [...report.drift] } : {}),
        ...(behind ? { error: `sent ${shortDigest(n.lastSent!)}, last applied ${shortDigest(local.digest)} (its host's own record)` } : {}),
      };
    }
    if (!report) return { node: n.name, digest: null, ok: false, files: [], error: n.lastSent ? `sent ${shortDigest(n.lastSent)}, no report from the node yet` : "nothing sent yet" };
    if (!report.ok) return { node: n.name, digest: report.digest, ok: false, files: [], error: report.error ?? "the node could not apply it", ...seen };
    if (n.lastSent !== null && report.digest !== n.lastSent) {
      return { node: n.name, digest: report.digest, ok: false, files: [], error: `sent ${shortDigest(n.lastSent)}, last reported applied ${shortDigest(report.digest)} at ${report.at}`, ...seen };
    }
    return { node: n.name, digest: report.digest, ok: true, files: [], ...seen };
  });
}

/** The summary's node rows from a `nodes` query reply. */
export function nodesOf(reply: { nodes: readonly NodeView[] }): UpSummary["nodes"] {
  return reply.nodes.map((n) => ({
    name: n.name,
    overlayName: n.overlayName,
    hub: n.hub,
    modules: [...n.modules],
    credentialAddress: n.credentialAddress,
    lastSent: n.lastSent?.digest ?? null,
  }));
}

/** The summary's seat rows from a `seats` query reply. */
export function seatsOf(reply: { seats: readonly SeatView[] }): UpSummary["seats"] {
  return reply.seats.map((s) => ({ name: s.name, protocol: s.protocol, holders: [...s.holders], accepts: [...s.accepts] }));
}

/** `kind:name` by bus user, from a `credentials` query reply. */
export function principalsByUser(reply: { credentials: readonly CredentialView[] }): Record<string, string> {
  const out: Record<string, string> = {};
  for (const c of reply.credentials) out[c.user] = `${c.principal.kind}:${c.principal.name}`;
  return out;
}

/** A server of the bus as `mesh status` checks it: its name, client address, and the process `mesh up` runs it as, if any. */
export type BusServerSeen = { name: string; address: string; process?: string };

/** A bus server `mesh status` found down, and why. */
export type ServerDown = { name: string; address: string; why: string };

/**
 * R62: the servers among `servers` that are down, pure: one whose process `mesh up` started is
 * not running (`processes[process]` null), or whose address did not answer a dial (`unanswered`:
 * address → the dial's error). A cluster keeps serving with a server down, so the controller's
 * answer alone does not show it.
 */
export function serversDown(servers: readonly BusServerSeen[], processes: Readonly<Record<string, number | null>>, unanswered: ReadonlyMap<string, string>): ServerDown[] {
  return servers.flatMap((server) => {
    if (server.process !== undefined && processes[server.process] === null) return [{ name: server.name, address: server.address, why: `its process ${server.process} is not running` }];
    const error = unanswered.get(server.address);
    return error === undefined ? [] : [{ name: server.name, address: server.address, why: `it did not answer: ${error}` }];
  });
}

/** The line `mesh status` says of the servers down (serversDown, at least one) and `fix`. */
export function serversDownLine(down: readonly ServerDown[], fix: string): string {
  const each = down.map((s) => `${s.name} (${s.address}) is down: ${s.why}`).join("; ");
  return `bus server ${each}; the others still serve (R62), each stream short of a copy until it is back: ${fix}`;
}
