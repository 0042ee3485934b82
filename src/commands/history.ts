import { HISTORY_LIMIT, HistoryRequest, type BodyOf, type HistoryEntry } from "../contracts/verbs.ts";
import type { Commit, Entity, MeshEvent } from "../events/index.ts";
import type { SequencedCommit, State } from "../projections/index.ts";
import { assertNever } from "../projections/assertNever.ts";
import { busUser } from "../names.ts";
import { usedSeats } from "../manifest/manifest.ts";
import { query, notFound } from "./envelope.ts";

export { HISTORY_LIMIT, type HistoryEntry };

/**
 * The most bytes (JSON) the events of one answer may take: below the bus's 1 MiB max_payload with
 * room for the envelope. Older events are left out first when the newest `limit` would not fit.
 */
export const HISTORY_REPLY_BYTES = 768 * 1024;

const utf8 = new TextEncoder();
const HIDDEN = new Set(["type", "actor", "commandId", "at", "hash", "sealed"]);

/** The seats a manifest names: declared, claimed, used or followed. */
function seatsNamed(manifest: Extract<MeshEvent, { type: "ModuleRegistered" }>["manifest"]): string[] {
  return [...Object.keys(manifest.seats), ...manifest.claims, ...usedSeats(manifest), ...manifest.follows.map((f) => f.seat)];
}

/**
 * Whether `event` is about `entity`, whatever commit it was filed in. Pure; an exhaustive switch
 * over event types (adding one fails the type-check until it is decided here):
 * - a node: its enrolment, removal, overlay place, credential, declarations sent, the modules
 *   assigned to or taken off it, and the seats handed over from or to it;
 * - a module: its registration (any version), issue, credential, assignments and the provisions
 *   minted for it;
 * - a seat: the registrations that declare, claim, use or follow it (by the name written, aliases
 *   are not followed), its aliases (from or to), handovers and provisions;
 * - a principal (controller, operator, builder): its credential events; the controller also
 *   MeshCreated, which names its bootstrap user (R13);
 * - the mesh: MeshCreated. A push is found by where its commits were filed (see historyOf).
 */
export function mentions(event: MeshEvent, entity: Entity): boolean {
  const { kind, id } = entity;
  switch (event.type) {
    case "CommitVoided":
    case "RecordsRestored":
      return kind === "mesh";
    case "MeshCreated":
      return kind === "mesh" || (kind === "controller" && event.bootstrapUser === busUser("controller", id));
    case "NodeEnrolled":
    case "NodeRemoved":
    case "OverlayPlaced":
    case "DeclarationSent":
      return kind === "node" && event.node === id;
    case "CredentialMinted":
    case "CredentialRotated":
    case "CredentialRevoked":
      return event.principal.kind === kind && event.principal.name === id;
    case "ModuleRegistered":
      return (kind === "module" && event.manifest.name === id) || (kind === "seat" && seatsNamed(event.manifest).includes(id));
    case "ModuleIssued":
    case "ModuleRetired":
      return kind === "module" && event.module === id;
    case "ModuleAssigned":
    case "ModuleUnassigned":
      return (kind === "module" && event.module === id) || (kind === "node" && event.node === id);
    case "SeatAliased":
      return kind === "seat" && (event.from === id || event.to === id);
    case "SeatHandedOver":
      return (kind === "seat" && event.seat === id) || (kind === "node" && (event.from === id || event.to === id));
    case "ProvisionMinted":
    case "ProvisionRotated":
      return (kind === "seat" && event.seat === id) || (kind === "module" && event.consumer === id);
    default:
      return assertNever(event);
  }
}

/** Whether a commit holds anything about `entity`: filed under it, or an event mentions it. Pure. */
export function concerns(commit: Commit, entity: Entity): boolean {
  const filed = commit.entity.kind === entity.kind && commit.entity.id === entity.id;
  return filed || commit.events.some((event) => mentions(event, entity));
}

/** One line naming the parties of an event, never a hash or a sealed secret (R3). Pure. */
export function summaryOf(event: MeshEvent): string {
  switch (event.type) {
    case "MeshCreated":
      return `mesh created at ${event.genesisAddress}; bootstrap user ${event.bootstrapUser}`;
    case "NodeEnrolled":
      return `node ${event.node} enrolled`;
    case "NodeRemoved":
      return `node ${event.node} removed`;
    case "CredentialMinted":
    case "CredentialRotated": {
      const verb = event.type === "CredentialMinted" ? "minted" : "rotated";
      return `credential of ${event.principal.kind} ${event.principal.name} ${verb}: user ${event.user} at ${event.address}`;
    }
    case "CredentialRevoked":
      return `credential of ${event.principal.kind} ${event.principal.name} revoked`;
    case "ModuleRegistered": {
      const m = event.manifest;
      const parts = [
        Object.keys(m.seats).length ? `declares ${Object.keys(m.seats).sort().join(", ")}` : "",
        m.claims.length ? `claims ${m.claims.join(", ")}` : "",
        m.uses.length ? `uses ${m.uses.join(", ")}` : "",
        m.follows.length ? `follows ${m.follows.map((f) => `${f.seat}/${f.event}`).join(", ")}` : "",
      ].filter(Boolean);
      const replaces = event.replaces === undefined ? "" : `, replacing version ${event.replaces}`;
      return `module ${m.name} version ${m.version} registered${replaces}${parts.length ? `: ${parts.join("; ")}` : ""}`;
    }
    case "ModuleIssued":
      return `module ${event.module} issued`;
    case "ModuleRetired":
      return `module ${event.module} version ${event.version} retired`;
    case "ModuleAssigned":
      return `module ${event.module} assigned to node ${event.node}`;
    case "ModuleUnassigned":
      return `module ${event.module} taken off node ${event.node}`;
    case "SeatAliased":
      return `seat ${event.from} renamed to ${event.to}`;
    case "SeatHandedOver":
      return `seat ${event.seat} handed over from node ${event.from} to node ${event.to}`;
    case "OverlayPlaced":
      return `node ${event.node} placed on the overlay as ${event.overlayName}${event.hub ? " (hub)" : ""}`;
    case "ProvisionMinted":
    case "ProvisionRotated":
      return `provision ${event.provision} of seat ${event.seat} ${event.type === "ProvisionMinted" ? "minted" : "rotated"} for module ${event.consumer} (user ${event.user})`;
    case "DeclarationSent":
      return `declaration sent to node ${event.node} (composed from records sequence ${event.recordsSequence})`;
    case "RecordsRestored":
      return `records accepted as restored${event.lost ? ` (sequences ${event.lost.from}..${event.lost.to} lost)` : ""}: ${event.evidence.map((e) => e.kind).join(", ") || "on the operator's word"}`;
    case "CommitVoided":
      return `commit at sequence ${event.sequence} (${event.types.join(", ") || "no event types"}) voided: ${event.reason}`;
    default:
      return assertNever(event);
  }
}

/**
 * The history of `query`'s entity from commits in stream order: the events `concerns`/`mentions`
 * keep (so the caller may pass more commits than the entity's), the newest `query.limit`
 * (default HISTORY_LIMIT) and no more than HISTORY_REPLY_BYTES of JSON. `total` counts every event
 * found; `truncated` says older ones were left out. Pure.
 */
export function historyOf(
  commits: readonly SequencedCommit[],
  query: HistoryRequest,
): BodyOf<"history"> {
  const entity = { kind: query.kind, id: query.id };
  const found: HistoryEntry[] = [];
  for (const { sequence, commit } of commits) {
    const filed = commit.entity.kind === entity.kind && commit.entity.id === entity.id;
    for (const event of commit.events) {
      if (!filed && !mentions(event, entity)) continue;
      found.push({
        sequence,
        commandId: event.commandId,
        actor: event.actor,
        at: event.at,
        type: event.type,
        filedUnder: `${commit.entity.kind}/${commit.entity.id}`,
        summary: summaryOf(event),
        details: Object.fromEntries(Object.entries(event).filter(([key]) => !HIDDEN.has(key))),
      });
    }
  }
  const limit = query.limit ?? HISTORY_LIMIT;
  const events: HistoryEntry[] = [];
  let bytes = 0;
  for (let i = found.length - 1; i >= 0 && events.length < limit; i -= 1) {
    const entry = found[i]!;
    bytes += utf8.encode(JSON.stringify(entry)).length + 1;
    if (bytes > HISTORY_REPLY_BYTES) break;
    events.push(entry);
  }
  events.reverse();
  return { entity, events, total: found.length, truncated: events.length < found.length };
}

export const history = query("history", {
  answer(_state: State, _query: HistoryRequest): never {
    throw new Error("history is answered from the records: scan the commits and call fromCommits.answer");
  },
  fromCommits: {
    concerns: (commit, query) => concerns(commit, { kind: query.kind, id: query.id }),
    answer: (commits, query) => {
      const found = historyOf(commits, query);
      return found.total === 0 ? notFound(`no records about ${query.kind} ${query.id}: check the name (mesh nodes, mesh modules, mesh seats)`, "id") : found;
    },
  },
});
