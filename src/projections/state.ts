import { createDraft, finishDraft, produce, type Draft } from "immer";
import type { Commit } from "../events/index.ts";
import { evolveMesh, initialMesh, type MeshState } from "./mesh.ts";
import { evolveNodes, initialNodes, type NodesState } from "./nodes.ts";
import { evolveModules, initialModules, type ModulesState } from "./modules.ts";
import { evolveCredentials, initialCredentials, type CredentialsState } from "./credentials.ts";
import { evolveAssignments, initialAssignments, type AssignmentsState } from "./assignments.ts";
import { evolveOverlay, initialOverlay, type OverlayState } from "./overlay.ts";
import { evolveProvisions, initialProvisions, type ProvisionsState } from "./provisions.ts";
import { evolveSent, initialSent, type SentState } from "./sent.ts";

/**
 * The folded records: one slice per concern, plus the last folded stream sequence (the fence of
 * the next append, R40) and the command ids already applied with their commit's sequence (so a
 * retried command appends nothing, also after the stream's dedupe window). Plain JSON data.
 */
export type State = {
  sequence: number;
  applied: Record<string, number>;
  mesh: MeshState;
  nodes: NodesState;
  modules: ModulesState;
  credentials: CredentialsState;
  assignments: AssignmentsState;
  overlay: OverlayState;
  provisions: ProvisionsState;
  sent: SentState;
};

export const initialState: State = {
  sequence: 0,
  applied: {},
  mesh: initialMesh,
  nodes: initialNodes,
  modules: initialModules,
  credentials: initialCredentials,
  assignments: initialAssignments,
  overlay: initialOverlay,
  provisions: initialProvisions,
  sent: initialSent,
};

/** A commit as read from the stream, with its stream sequence. */
export type SequencedCommit = { sequence: number; commit: Commit };

function applyCommit(draft: Draft<State>, { sequence, commit }: SequencedCommit): void {
  for (const event of commit.events) {
    const mesh = evolveMesh(draft.mesh, event);
    if (mesh !== undefined) draft.mesh = mesh;
    evolveNodes(draft.nodes, event);
    evolveModules(draft.modules, event);
    evolveCredentials(draft.credentials, event);
    evolveAssignments(draft.assignments, event);
    evolveOverlay(draft.overlay, event);
    evolveProvisions(draft.provisions, event);
    evolveSent(draft.sent, event);
  }
  draft.applied[commit.commandId] = sequence;
  draft.sequence = sequence;
}

/**
 * Folds commits, in stream order, into the state: one immer `produce` for the whole batch.
 * Pure: same state and commits give the same result. Throws nothing for a well-formed commit
 * (commits are validated by the reader before they reach the fold).
 */
export function evolve(state: State, commits: readonly SequencedCommit[]): State {
  if (commits.length === 0) return state;
  return produce(state, (draft) => {
    for (const commit of commits) applyCommit(draft, commit);
  });
}

/** A fold in progress: commits are added in stream order, then the state is finished once. */
export type Fold = { add(commits: readonly SequencedCommit[]): void; finish(): State };

/**
 * A long fold (a replay, a catch-up) in one immer draft: `add` batches of commits in stream order
 * as they are read, then `finish` once. Gives the same state as `evolve` over the same commits,
 * in time linear in the commits: each `evolve` call copies every map it touches, and `applied`
 * grows with the whole history. Pure: the input state is left as it was.
 */
export function startFold(state: State): Fold {
  let draft: Draft<State> | null = null;
  let finished: State | null = null;
  return {
    add(commits) {
      if (finished !== null) throw new Error("startFold: add after finish");
      if (commits.length === 0) return;
      draft ??= createDraft(state);
      for (const commit of commits) applyCommit(draft, commit);
    },
    finish() {
      finished ??= draft === null ? state : (finishDraft(draft) as State);
      return finished;
    },
  };
}
