import { z } from "zod";
import type { JetStreamManager } from "@nats-io/jetstream";
import { MeshName } from "../manifest/manifest.ts";
import type { Reply } from "../commands/envelope.ts";
import type { ExtraVerb } from "../commands/server.ts";
import { parseRequest } from "../commands/validation.ts";
import { REPORTS_STREAM, REPORT_SUBJECTS, reportSubject } from "../names.ts";

/**
 * R55: every node's last report, read from the REPORTS stream (which keeps the last report per
 * node, max_msgs_per_subject 1), for remote nodes as for the local one: `mesh nodes` and `mesh
 * status` show it. Served by the controller (it holds the JetStream grants; operators have none).
 */

/** The verb: `mesh.command.<asker>.reports` (R51). */
export const REPORTS_VERB = "reports";
/** Nodes per reply at most (R59: a report is a few hundred bytes; 500 stay far under 1 MiB). */
export const REPORTS_PAGE = 500;

/** `reports {nodes?, after?, limit?}`: the named nodes' last reports, or every node's, a page at a time. */
export const ReportsRequest = z
  .object({
    nodes: z.array(MeshName).max(REPORTS_PAGE).optional().describe(`the nodes whose last report to read (at most ${REPORTS_PAGE}); default every node that reported`),
    after: MeshName.optional().describe("without nodes: start after this node name (the previous page's `next`)"),
    limit: z.number().int().positive().max(REPORTS_PAGE).default(REPORTS_PAGE).describe("without nodes: reports per page"),
  })
  .strict();
export type ReportsRequest = z.infer<typeof ReportsRequest>;

/** A node's last report as the bus holds it: what it applied (digest, ok), when (`at`, the stream's time), drift, error. */
export type LastReport = { node: string; at: string; digest: string; ok: boolean; error?: string; drift?: string[] };

/** The reply: the reports found (a node with none is absent), and `next` when another page follows. */
export type ReportsReply = { ok: true; reports: LastReport[]; next?: string };

/** The node a report subject names (`mesh.report.<node>`), or null. */
function nodeOfSubject(subject: string): string | null {
  const prefix = reportSubject("");
  return subject.startsWith(prefix) && subject.length > prefix.length ? subject.slice(prefix.length) : null;
}

/**
 * Reads the last stored report of each of `nodes` (in that order; a node with no stored report,
 * or one that does not parse, is left out), all at once: callers pass a page (REPORTS_PAGE at most).
 */
export async function readLastReports(jsm: JetStreamManager, nodes: readonly string[]): Promise<LastReport[]> {
  const found = await Promise.all(nodes.map(async (node): Promise<LastReport | null> => {
    const stored = await jsm.streams.getMessage(REPORTS_STREAM, { last_by_subj: reportSubject(node) }).catch(() => null);
    if (!stored) return null;
    try {
      const r = stored.json<{ digest?: unknown; ok?: unknown; error?: unknown; drift?: unknown }>();
      if (typeof r.digest !== "string") return null;
      return {
        node, at: stored.time.toISOString(), digest: r.digest, ok: r.ok === true,
        ...(typeof r.error === "string" ? { error: r.error } : {}),
        ...(Array.isArray(r.drift) ? { drift: r.drift.filter((f): f is string => typeof f === "string") } : {}),
      };
    } catch {
      return null;
    }
  }));
  return found.filter((r): r is LastReport => r !== null);
}

/** Every node with a stored report, sorted by name. */
async function reportingNodes(jsm: JetStreamManager): Promise<string[]> {
  const info = await jsm.streams.info(REPORTS_STREAM, { subjects_filter: REPORT_SUBJECTS });
  return Object.keys(info.state.subjects ?? {}).map(nodeOfSubject).filter((n): n is string => n !== null).sort();
}

/**
 * The `reports` verb as the command server serves it (extraVerbs). Refuses a body the schema does
 * not take (`invalid-request` naming the field); a bus error becomes the server's `internal` reply.
 */
export function reportsVerb(manager: JetStreamManager): ExtraVerb {
  return async (body): Promise<Reply> => {
    const { commandId: _ignored, ...fields } = body;
    const parsed = parseRequest(ReportsRequest, fields);
    if (!parsed.ok) return { ok: false, error: parsed.refusal };
    const request = parsed.value;
    if (request.nodes !== undefined) {
      return { ok: true, reports: await readLastReports(manager, request.nodes) } as unknown as Reply;
    }
    const all = await reportingNodes(manager);
    const from = request.after === undefined ? all : all.filter((n) => n > request.after!);
    const page = from.slice(0, request.limit);
    const reply: ReportsReply = { ok: true, reports: await readLastReports(manager, page) };
    if (from.length > page.length) reply.next = page.at(-1)!;
    return reply as unknown as Reply;
  };
}
