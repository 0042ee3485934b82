import type { Commit } from "../events/index.ts";
import { evolveMesh, initialMesh, type MeshState } from "./mesh.ts";
import { evolveNodes, initialNodes, type NodesState } from "./nodes.ts";
import { evolveModules, initialModules, type ModulesState } from "./modules.ts";
import { evolveCredentials, initialCredentials, newDeliveryIndex, type CredentialsState, type DeliveryIndex } from "./credentials.ts";
import { evolveAssignments, initialAssignments, type AssignmentsState } from "./assignments.ts";
import { evolveOverlay, initialOverlay, type OverlayState } from "./overlay.ts";
import { evolveProvisions, initialProvisions, type ProvisionsState } from "./provisions.ts";
import { evolveSent, initialSent, type SentState } from "./sent.ts";
import { evolveRetired, initialRetired, type RetiredState } from "./retired.ts";
import { OWN_ALL, emptyBuckets, getIn, setIn, type Buckets, type Owned } from "./buckets.ts";

/**
 * The folded records: one slice per concern, plus the last folded stream sequence (the fence of
 * the next append, R40) and the command ids already applied with their commit's sequence (so a
 * retried command appends nothing, also after the stream's dedupe window). Plain JSON data.
 * `applied` grows with the whole history, so it is a bucketed map (buckets.ts: a commit copies a
 * few small arrays and one small leaf of it, not every command id): read it with appliedSequence.
 * So are the maps of every slice that grow with the mesh (nodes, modules and seats, credentials,
 * assignments, placements, provisions, what was sent, the retired keys): each slice's file has the readers.
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
  retired: RetiredState;
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
  retired: initialRetired,
};

/** The stream sequence of the commit that applied `commandId`, or undefined when none did. */
export function appliedSequence(state: State, commandId: string): number | undefined {
  return getIn(state.applied, commandId);
}

/** A commit as read from the stream, with its stream sequence. */
export type SequencedCommit = { sequence: number; commit: Commit };

/**
 * A state being folded: its slices as one fold has made them so far, changed by the slices'
 * evolve functions (each takes its slice and returns it, new where it changed); `owned` is what the
 * fold may change in place (buckets.ts setIn: what it made itself, or all of a private copy), and
 * `index` its delivery index (credentials.ts).
 */
type Folding = { state: State; owned: Owned; index: DeliveryIndex };

function folding(state: State, owned: Owned): Folding {
  return { state, owned, index: newDeliveryIndex() };
}

/** Folds one commit into `fold`: a new state object when the state it holds is not its own. */
function applyCommit(fold: Folding, { sequence, commit }: SequencedCommit): void {
  const { owned, index } = fold;
  const before = fold.state;
  let { mesh, nodes, modules, credentials, assignments, overlay, provisions, sent, retired } = before;
  for (const event of commit.events) {
    // First: it reads the keys the nodes and credentials hold before this event ends them (R66).
    retired = evolveRetired(retired, event, owned, sequence, nodes, credentials);
    mesh = evolveMesh(mesh, event);
    nodes = evolveNodes(nodes, event, owned);
    modules = evolveModules(modules, event, owned);
    credentials = evolveCredentials(credentials, event, owned, sequence, index);
    assignments = evolveAssignments(assignments, event, owned);
    overlay = evolveOverlay(overlay, event, owned);
    provisions = evolveProvisions(provisions, event, owned, sequence, modules);
    sent = evolveSent(sent, event, owned);
  }
  const applied = setIn(before.applied, commit.commandId, sequence, owned);
  if (owned.has(before)) {
    Object.assign(before, { sequence, applied, mesh, nodes, modules, credentials, assignments, overlay, provisions, sent, retired });
  } else {
    fold.state = { sequence, applied, mesh, nodes, modules, credentials, assignments, overlay, provisions, sent, retired };
    owned.add(fold.state);
  }
}

/**
 * Folds commits, in stream order, into the state. Each slice's evolve copies what it changes
 * (each array and leaf of a bucketed map once per call, then changes its own copy in place) and
 * shares the rest with `state`. Pure: same state and commits give the same result, and `state`
 * is left as it was: no slice of it is changed in place, and a slice no commit touched is the same
 * object in the result (the push's CompositionMemo compares slices by identity; startFold's
 * "share" keeps this too). Throws nothing for a well-formed commit (commits are validated by the reader
 * before they reach the fold).
 */
export function evolve(state: State, commits: readonly SequencedCommit[]): State {
  if (commits.length === 0) return state;
  const fold = folding(state, new WeakSet<object>());
  for (const commit of commits) applyCommit(fold, commit);
  return fold.state;
}

/** A fold in progress: commits are added in stream order, then the state is finished once. */
export type Fold = { add(commits: readonly SequencedCommit[]): void; finish(): State };

/**
 * A long fold (a replay, a catch-up) with one state in progress: `add` batches of commits in
 * stream order as they are read, then `finish` (once; later calls return the same state). Gives
 * the same state as `evolve` over the same commits. Pure: the input state is left as it was.
 *
 * Two ways to hold the state in progress, same result (a unit test holds them equal):
 * - "share": the state as given, each array and leaf copied where it first changes and then
 *   changed in place (as one evolve call does). Cheap to start. For a short tail.
 * - "copy": a private deep copy of the state, changed in place by the same evolve functions (the
 *   fold owns all of it, OWN_ALL). No copies per event, but the copy costs one pass over the state
 *   up front (a JSON round trip: the state is plain JSON data, and structuredClone took ten times as
 *   long over a state of many keyed maps, seconds at 100,000 commits). For a replay or a long catch-up.
 */
export function startFold(state: State, mode: "share" | "copy" = "share"): Fold {
  let fold: Folding | null = null;
  let finished: State | null = null;
  return {
    add(commits) {
      if (finished !== null) throw new Error("startFold: add after finish");
      if (commits.length === 0) return;
      fold ??= mode === "copy" ? folding(JSON.parse(JSON.stringify(state)) as State, OWN_ALL) : folding(state, new WeakSet<object>());
      for (const commit of commits) applyCommit(fold, commit);
    },
    finish() {
      finished ??= fold === null ? state : fold.state;
      return finished;
    },
  };
}
