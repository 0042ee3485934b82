import { Immer, type Draft } from "immer";
import type { Commit } from "../events/index.ts";
import { evolveMesh, initialMesh, type MeshState } from "./mesh.ts";
import { evolveNodes, initialNodes, type NodesState } from "./nodes.ts";
import { evolveModules, initialModules, type ModulesState } from "./modules.ts";
import { evolveCredentials, initialCredentials, newDeliveryIndex, type CredentialsState, type DeliveryIndex } from "./credentials.ts";
import { evolveAssignments, initialAssignments, type AssignmentsState } from "./assignments.ts";
import { evolveOverlay, initialOverlay, type OverlayState } from "./overlay.ts";
import { evolveProvisions, initialProvisions, type ProvisionsState } from "./provisions.ts";
import { evolveSent, initialSent, type SentState } from "./sent.ts";
import { emptyBuckets, getIn, setIn, type Buckets } from "./buckets.ts";

/**
 * The folded records: one slice per concern, plus the last folded stream sequence (the fence of
 * the next append, R40) and the command ids already applied with their commit's sequence (so a
 * retried command appends nothing, also after the stream's dedupe window). Plain JSON data.
 * `applied` grows with the whole history, so it is a bucketed map (buckets.ts: a commit copies a
 * few small arrays and one small leaf of it, not every command id): read it with appliedSequence.
 * So are the other maps that grow with the mesh (nodes, credentials, the overlay's placements, what
 * was sent): each slice's file has the readers.
 */
export type State = {
  sequence: number;
  applied: Buckets<number>;
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
  applied: emptyBuckets(),
  mesh: initialMesh,
  nodes: initialNodes,
  modules: initialModules,
  credentials: initialCredentials,
  assignments: initialAssignments,
  overlay: initialOverlay,
  provisions: initialProvisions,
  sent: initialSent,
};

/**
 * The fold's own immer, without auto-freeze: freezing walks every child of each changed object
 * and Object.isFrozen is linear in the keys of a large map, so a frozen state made each commit
 * cost time in proportion to the whole history (seconds at a million commits). States are plain
 * data that callers treat as read-only; evolve still never changes the state it is given.
 */
const immer = new Immer({ autoFreeze: false });

/** The stream sequence of the commit that applied `commandId`, or undefined when none did. */
export function appliedSequence(state: State, commandId: string): number | undefined {
  return getIn(state.applied, commandId);
}

/** A commit as read from the stream, with its stream sequence. */
export type SequencedCommit = { sequence: number; commit: Commit };

function applyCommit(draft: Draft<State>, { sequence, commit }: SequencedCommit, index?: DeliveryIndex): void {
  for (const event of commit.events) {
    const mesh = evolveMesh(draft.mesh, event);
    if (mesh !== undefined) draft.mesh = mesh;
    evolveNodes(draft.nodes, event);
    evolveModules(draft.modules, event);
    evolveCredentials(draft.credentials, event, sequence, index);
    evolveAssignments(draft.assignments, event);
    evolveOverlay(draft.overlay, event);
    evolveProvisions(draft.provisions, event, sequence, draft.modules);
    evolveSent(draft.sent, event);
  }
  setIn(draft.applied, commit.commandId, sequence);
  draft.sequence = sequence;
}

/**
 * Folds commits, in stream order, into the state: one immer `produce` for the whole batch.
 * Pure: same state and commits give the same result. Throws nothing for a well-formed commit
 * (commits are validated by the reader before they reach the fold). No slice of `state` is changed
 * in place, and a slice no commit touched is the same object in the result: the push's
 * CompositionMemo compares slices by identity (startFold keeps this too).
 */
export function evolve(state: State, commits: readonly SequencedCommit[]): State {
  if (commits.length === 0) return state;
  // A node's removal looks for the credentials delivered to it (R48): through the draft that makes
  // an immer draft of every credential record, so the batch's index is built from the plain state.
  const removes = commits.some(({ commit }) => commit.events.some((event) => event.type === "NodeRemoved"));
  const index = removes ? newDeliveryIndex(state.credentials) : undefined;
  return immer.produce(state, (draft) => {
    for (const commit of commits) applyCommit(draft, commit, index);
  });
}

/** A fold in progress: commits are added in stream order, then the state is finished once. */
export type Fold = { add(commits: readonly SequencedCommit[]): void; finish(): State };

/**
 * A long fold (a replay, a catch-up) with one state in progress: `add` batches of commits in
 * stream order as they are read, then `finish` (once; later calls return the same state). Gives
 * the same state as `evolve` over the same commits. Pure: the input state is left as it was.
 *
 * Two ways to hold the state in progress, same result (a unit test holds them equal):
 * - "draft": one immer draft for the whole fold, so each map is copied once (each `evolve` call
 *   copies every map it touches, and `applied` grows with the whole history). Cheap to start; each
 *   event pays immer's proxies. For a short tail.
 * - "copy": a private deep copy of the state, changed in place by the same evolve functions (they
 *   are written as draft mutations, and a plain object takes them just as well). No proxies, many
 *   times faster per event, but the copy costs one pass over the state up front (a JSON round trip:
 *   the state is plain JSON data, and structuredClone took ten times as long over a state of many
 *   keyed maps, seconds at 100,000 commits). For a replay or a long catch-up.
 */
export function startFold(state: State, mode: "draft" | "copy" = "draft"): Fold {
  let working: Draft<State> | null = null;
  let finished: State | null = null;
  // A copy is this fold's own, so it can keep an index beside it (credentials.ts DeliveryIndex).
  const index = mode === "copy" ? newDeliveryIndex() : undefined;
  return {
    add(commits) {
      if (finished !== null) throw new Error("startFold: add after finish");
      if (commits.length === 0) return;
      working ??= mode === "copy" ? (JSON.parse(JSON.stringify(state)) as Draft<State>) : immer.createDraft(state);
      for (const commit of commits) applyCommit(working, commit, index);
    },
    finish() {
      if (finished === null) {
        if (working === null) finished = state;
        else finished = mode === "copy" ? (working as State) : (immer.finishDraft(working) as State);
      }
      return finished;
    },
  };
}
