import { createDraft, enableMapSet, finishDraft, freeze, produce, type Draft } from "immer";
import type { MeshEvent, MeshEventType } from "../events/index.ts";
import { assignmentsFold, type AssignmentsState } from "./assignments.ts";
import { credentialsFold, type CredentialsState } from "./credentials.ts";
import { DeliveredMap } from "./deliveredMap.ts";
import { meshFold, type MeshState } from "./mesh.ts";
import { modulesFold, type ModulesState } from "./modules.ts";
import { nodesFold, type NodesState } from "./nodes.ts";
import { overlayFold, type OverlayState } from "./overlay.ts";
import { provisionsFold, type ProvisionsState } from "./provisions.ts";
import { retiredFold, type RetiredState } from "./retired.ts";
import { sentFold, type SentState } from "./sent.ts";
import { ShardedMap } from "./shardedMap.ts";
import type { FoldContext, SliceFold } from "./slice.ts";

/**
 * The fold driver: the slices' handlers (slice.ts) run over one of three targets, the same code
 * for each, so every way of folding gives the same state (a unit test folds random histories
 * every way and compares them, and their snapshots):
 * - an immer draft of one evolve call's commits (`produce`, the live path: one commit);
 * - one immer draft for a whole batch of commits (createDraft / finishDraft: a catch-up, whose
 *   intermediate states nobody observes);
 * - plain Maps and objects of a fresh state nobody else holds (a fold from sequence 1: replay),
 *   changed in place, with no drafts at all.
 * Both drafts share what no event touched: a slice no commit changed is the same object after
 * (the push's CompositionMemo compares slices by identity).
 */

enableMapSet();

/** The folded slices of the records, one per concern: plain data of Maps, arrays and objects. */
export type Slices = {
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

const FOLDS: { readonly [K in keyof Slices]: SliceFold<Slices[K]> } = {
  mesh: meshFold, nodes: nodesFold, modules: modulesFold, credentials: credentialsFold, assignments: assignmentsFold,
  overlay: overlayFold, provisions: provisionsFold, sent: sentFold, retired: retiredFold,
};

/**
 * The order the slices fold each event in: `retired` first, as it reads the nodes and credentials
 * as they were before the event ended them (R66); `provisions` after `modules` (it reads the
 * catalogue as folded so far).
 */
export const SLICE_ORDER: readonly (keyof Slices)[] = ["retired", "mesh", "nodes", "modules", "credentials", "assignments", "overlay", "provisions", "sent"];

type Step = (slices: Draft<Slices>, event: MeshEvent, ctx: FoldContext) => void;
type AnyHandler = (draft: unknown, event: MeshEvent, ctx: FoldContext) => unknown;

/** For each event type, its slices' handlers in SLICE_ORDER (an event type no slice names has none). */
const STEPS: ReadonlyMap<MeshEventType, readonly Step[]> = (() => {
  const steps = new Map<MeshEventType, Step[]>();
  for (const name of SLICE_ORDER) {
    for (const [type, handler] of Object.entries(FOLDS[name]) as [MeshEventType, AnyHandler][]) {
      const step: Step = (slices, event, ctx) => {
        const replaced = handler(slices[name], event, ctx);
        if (replaced !== undefined) (slices as Record<string, unknown>)[name] = replaced;
      };
      steps.set(type, [...(steps.get(type) ?? []), step]);
    }
  }
  return steps;
})();

/** Folds `events` of the commit at `sequence` into `slices` (a draft, or plain slices the fold owns), in place. */
export function foldEvents(slices: Draft<Slices>, sequence: number, events: readonly MeshEvent[]): void {
  const ctx: FoldContext = { sequence, slices: slices as unknown as Slices };
  for (const event of events) {
    const steps = STEPS.get(event.type);
    if (steps !== undefined) for (const step of steps) step(slices, event, ctx);
  }
}

/** The slices of `state` (or of any object holding them), as a new object of those fields alone. */
export function slicesOf(state: Slices): Slices {
  const { mesh, nodes, modules, credentials, assignments, overlay, provisions, sent, retired } = state;
  return { mesh, nodes, modules, credentials, assignments, overlay, provisions, sent, retired };
}

/**
 * New empty slices, every Map and object a fresh one: the one empty state (initialState is made of
 * them), and the target of a fold that changes them in place. The slices that grow with the mesh
 * are ShardedMaps (shardedMap.ts).
 */
export function freshSlices(): Slices {
  return {
    mesh: null, nodes: new ShardedMap(), credentials: new DeliveredMap(), provisions: new DeliveredMap(), sent: new ShardedMap(), retired: new ShardedMap(),
    modules: { modules: new Map(), seats: new Map(), aliases: new Map(), retired: new Map() },
    assignments: { byModule: new ShardedMap(), byNode: new ShardedMap(), handovers: new Map() },
    overlay: { hub: null, placed: new ShardedMap() },
  };
}

/** One evolve's fold: `produce` over the slices, each commit's events in turn (`each` is told each commit). */
export function produceSlices<C extends { sequence: number; events: readonly MeshEvent[] }>(base: Slices, commits: readonly C[], each: (commit: C) => void): Slices {
  return produce(slicesOf(base), (draft) => {
    for (const commit of commits) {
      foldEvents(draft, commit.sequence, commit.events);
      each(commit);
    }
  });
}

/** A batch fold's target: an immer draft of `base` over many commits (finish once), or plain fresh slices. */
export type SlicesTarget = { slices: Draft<Slices>; finish(): Slices };

/** One draft for a whole batch of commits: what nobody observes in between is never finalized. */
export function draftSlices(base: Slices): SlicesTarget {
  const draft = createDraft(slicesOf(base));
  let finished: Slices | null = null;
  return { slices: draft, finish: () => (finished ??= finishDraft(draft) as Slices) };
}

/**
 * Plain fresh slices changed in place (no drafts): for a fold from the empty state nobody else
 * holds. Frozen deep when finished, as immer leaves what it makes: immer skips a frozen value when
 * it finishes a draft, and walks (and freezes) an unfrozen one, so a state left unfrozen made the
 * first commits after a replay pay for walking the whole of it.
 */
export function plainSlices(): SlicesTarget {
  const slices = freshSlices();
  return { slices: slices as unknown as Draft<Slices>, finish: () => freeze(slices, true) };
}
