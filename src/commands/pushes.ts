import { PUSH_NODES_SHOWN, type BodyOf, type PushView, type PushesRequest } from "../contracts/verbs.ts";
import type { Commit } from "../events/index.ts";
import type { SequencedCommit, State } from "../projections/index.ts";
import { query } from "./envelope.ts";

/** Whether a commit is one of a push's (filed under push/<id>: what it sent, R31, and the provisions it minted). */
export function isPushCommit(commit: Commit): boolean {
  return commit.entity.kind === "push";
}

/**
 * The first records sequence worth scanning for the newest `limit` pushes, from what each node
 * was last sent (state.sent: one `at` per push, its records sequence below the push's commits):
 * the oldest records sequence of the newest `limit` pushes some node still has as its last; 1 when
 * fewer pushes are left there (older ones may be the newest of the records). One pass over the
 * nodes' sent records; pure.
 */
export function pushesSince(state: State, limit: number): number {
  const pushes = new Map<string, number>();
  for (const sent of state.sent.values()) {
    const seen = pushes.get(sent.at);
    if (seen === undefined || sent.recordsSequence < seen) pushes.set(sent.at, sent.recordsSequence);
  }
  if (pushes.size < limit) return 1;
  const newest = [...pushes.values()].sort((a, b) => b - a).slice(0, limit);
  return Math.max(1, Math.min(...newest));
}

/** The newest `request.limit` pushes of `commits` (any commits: only the push ones count), newest first. Pure. */
export function pushesOf(commits: readonly SequencedCommit[], request: PushesRequest): BodyOf<"pushes"> {
  const byId = new Map<string, PushView>();
  for (const { sequence, commit } of commits) {
    if (!isPushCommit(commit)) continue;
    const id = commit.entity.id;
    let view = byId.get(id);
    if (view === undefined) {
      const first = commit.events[0];
      view = { id, at: first?.at ?? "", actor: first?.actor ?? "", commandIds: [], sequences: [], recordsSequence: null, sent: 0, nodes: [], provisions: 0 };
      byId.set(id, view);
    }
    view.commandIds.push(commit.commandId);
    view.sequences.push(sequence);
    for (const event of commit.events) {
      if (event.type === "DeclarationSent") {
        view.sent += 1;
        view.recordsSequence = Math.max(view.recordsSequence ?? 0, event.recordsSequence);
        if (view.nodes.length < PUSH_NODES_SHOWN) view.nodes.push({ node: event.node, digest: event.digest });
      } else if (event.type === "ProvisionMinted") view.provisions += 1;
    }
  }
  // Newest first by its last commit: a push's commits may interleave with others' appends.
  const last = (v: PushView): number => v.sequences[v.sequences.length - 1] ?? 0;
  return { pushes: [...byId.values()].sort((a, b) => last(b) - last(a)).slice(0, request.limit) };
}

export const pushes = query("pushes", {
  answer(_state: State, _query: PushesRequest): never {
    throw new Error("pushes is answered from the records: scan the commits and call fromCommits.answer");
  },
  fromCommits: {
    since: (state, request) => pushesSince(state, request.limit),
    concerns: (commit) => isPushCommit(commit),
    answer: (commits, request) => pushesOf(commits, request),
  },
});
