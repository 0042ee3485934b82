/**
 * What `mesh up` and `mesh status` print: the nodes, who holds each seat, the users on the bus and
 * what each node applied. Pure: built from the controller's query replies, the user-list file and
 * the host's record of what it applied; rendered to lines. Never a password or a hash (R3).
 */

type Row = Record<string, unknown>;

export type UpSummary = {
  mesh: { genesisAddress: string; fingerprint: string; dir: string };
  nodes: Array<{ name: string; overlayName: string | null; hub: boolean; modules: string[]; credentialAddress: string | null; lastSent: string | null }>;
  seats: Array<{ name: string; protocol: string; holders: string[]; accepts: string[] }>;
  /** The users of the bus's user-list file, with the principal of each when the records know it. */
  busUsers: Array<{ user: string; principal: string | null; publishes: number; subscribes: number }>;
  /** What each node last applied, as its host recorded it. */
  applied: Array<{ node: string; digest: string | null; ok: boolean; files: string[]; error?: string }>;
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
  lines.push(`mesh at ${summary.mesh.genesisAddress} (certificate ${summary.mesh.fingerprint}), records in ${summary.mesh.dir}`);
  const processes = Object.entries(summary.processes).map(([name, pid]) => `${name} ${pid === null ? "stopped" : `pid ${pid}`}`);
  if (processes.length > 0) lines.push(`processes: ${processes.join(", ")}`);
  lines.push("", "nodes:");
  lines.push(...table(
    summary.nodes.map((n) => [n.name, dash(n.overlayName) + (n.hub ? " (hub)" : ""), dash(n.credentialAddress), n.modules.join(",") || "-"]),
    ["NODE", "OVERLAY", "DIALS", "MODULES"],
  ));
  lines.push("", "seats:");
  lines.push(...table(
    summary.seats.map((s) => [s.name, s.protocol === "" ? "(marker)" : s.protocol, s.holders.join(",") || "(nobody)", s.accepts.join(",") || "-"]),
    ["SEAT", "PROTOCOL", "HELD BY", "ACCEPTS"],
  ));
  lines.push("", "users on the bus:");
  lines.push(...table(
    summary.busUsers.map((u) => [u.user, dash(u.principal), `${u.publishes} publish, ${u.subscribes} subscribe`]),
    ["USER", "PRINCIPAL", "GRANTS"],
  ));
  lines.push("", "applied:");
  lines.push(...table(
    summary.applied.map((a) => [a.node, a.digest ? a.digest.slice(0, 12) : "-", a.ok ? `ok, ${a.files.length} files` : `NOT APPLIED: ${dash(a.error)}`]),
    ["NODE", "DECLARATION", "RESULT"],
  ));
  return lines;
}

/** Picks the summary's node rows out of a `nodes` query reply. */
export function nodesOf(reply: Row): UpSummary["nodes"] {
  const nodes = (reply.nodes ?? []) as Row[];
  return nodes.map((n) => ({
    name: String(n.name),
    overlayName: (n.overlayName as string | null) ?? null,
    hub: n.hub === true,
    modules: ((n.modules ?? []) as string[]).slice(),
    credentialAddress: (n.credentialAddress as string | null) ?? null,
    lastSent: ((n.lastSent as { digest?: string } | null)?.digest) ?? null,
  }));
}

/** Picks the summary's seat rows out of a `seats` query reply. */
export function seatsOf(reply: Row): UpSummary["seats"] {
  const seats = (reply.seats ?? []) as Row[];
  return seats.map((s) => ({
    name: String(s.name),
    protocol: String(s.protocol ?? ""),
    holders: ((s.holders ?? []) as string[]).slice(),
    accepts: ((s.accepts ?? []) as string[]).slice(),
  }));
}

/** `kind:name` by bus user, from a `credentials` query reply. */
export function principalsByUser(reply: Row): Record<string, string> {
  const out: Record<string, string> = {};
  for (const c of (reply.credentials ?? []) as Row[]) {
    const p = c.principal as { kind: string; name: string };
    out[String(c.user)] = `${p.kind}:${p.name}`;
  }
  return out;
}
