import type { Commit } from "../events/index.ts";
import { draftSlices, freshSlices, foldEvents, plainSlices, produceSlices, type Slices, type SlicesTarget } from "./fold.ts";
import { bucketsFrom, getIn, setIn, type Buckets } from "./buckets.ts";

/**
 * The folded records: one slice per concern (fold.ts Slices; each slice's file has its readers),
 * plus the last folded stream sequence (the fence of the next append, R40) and the command ids
 * already applied with their commit's sequence (so a retried command appends nothing, also after
 * the stream's dedupe window). `applied` grows with the whole history (a million ids at a million
 * commits), and every commit adds one: copying a Map of it per commit cost tens of milliseconds
 * there, so it is a bucketed map (buckets.ts: a commit copies a few small arrays and one leaf),
 * kept by the driver beside the slices, never by a slice. Read it with appliedSequence.
 */
export type State = Slices & { readonly sequence: number; readonly applied: Buckets<number> };

/** The empty records (frozen: every fold copies what it changes, or folds into fresh slices). */
export const initialState: State = Object.freeze({ ...freshSlices(), sequence: 0, applied: bucketsFrom<number>([], []) });

/** The stream sequence of the commit that applied `commandId`, or undefined when none did. */
export function appliedSequence(state: State, commandId: string): number | undefined {
  return getIn(state.applied, commandId);
}

/** A commit as read from the stream, with its stream sequence. */
export type SequencedCommit = { sequence: number; commit: Commit };

/**
 * Folds commits, in stream order, into the state: one immer `produce` over them (fold.ts), so
 * `state` is left as it was and a slice no commit touched is the same object in the result (the
 * push's CompositionMemo compares slices by identity). Pure: same state and commits give the same
 * result. Throws nothing for a well-formed commit (commits are validated by the reader before they
 * reach the fold).
 */
export function evolve(state: State, commits: readonly SequencedCommit[]): State {
  if (commits.length === 0) return state;
  let applied = state.applied;
  const owned = new WeakSet<object>();
  const steps = commits.map(({ sequence, commit }) => ({ sequence, events: commit.events, commandId: commit.commandId }));
  const slices = produceSlices(state, steps, ({ sequence, commandId }) => {
    applied = setIn(applied, commandId, sequence, owned);
  });
  return { ...slices, sequence: commits.at(-1)!.sequence, applied };
}

/** A fold in progress: commits are added in stream order, then the state is finished once. */
export type Fold = { add(commits: readonly SequencedCommit[]): void; finish(): State };

/**
 * A long fold (a replay, a catch-up) with one state in progress: `add` batches of commits in
 * stream order as they are read, then `finish` (once; later calls return the same state). Gives
 * the same state as `evolve` over the same commits. Pure: the input state is left as it was.
 * From `initialState` (a replay) it folds into fresh plain slices changed in place, no drafts
 * (nobody else holds them and no state in between is observed); from any other state into one
 * immer draft for every batch, finished once.
 */
export function startFold(state: State): Fold {
  let target: SlicesTarget | null = null;
  let applied = state.applied;
  const owned = new WeakSet<object>();
  // A fold from empty collects the command ids in a plain Map and files them once, at the end.
  let collected: Map<string, number> | null = null;
  let sequence = state.sequence;
  let finished: State | null = null;
  return {
    add(commits) {
      if (finished !== null) throw new Error("startFold: add after finish");
      if (commits.length === 0) return;
      if (target === null) {
        const fresh = state === initialState;
        target = fresh ? plainSlices() : draftSlices(state);
        if (fresh) collected = new Map();
      }
      for (const { sequence: at, commit } of commits) {
        foldEvents(target.slices, at, commit.events);
        if (collected !== null) collected.set(commit.commandId, at);
        else applied = setIn(applied, commit.commandId, at, owned);
        sequence = at;
      }
    },
    finish() {
      if (collected !== null) applied = bucketsFrom([...collected.keys()], [...collected.values()]);
      collected = null;
      finished ??= target === null ? state : { ...target.finish(), sequence, applied };
      return finished;
    },
  };
}
