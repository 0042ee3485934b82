import { createHash, hash } from "node:crypto";
import { composeDeclarations, type Declaration } from "../compose/declaration.ts";
import { openOverlaps, type OverlapReports } from "../compose/overlap.ts";
import type { ComposeConfig } from "../compose/types.ts";
import type { State } from "../projections/index.ts";

/** What a round composes: the digest of a text, the composition remembered across pushes, redaction for a dry run. */

/** Texts longer than this are hashed from their UTF-8 bytes (see sha256). */
const HASH_AS_BYTES = 64 * 1024;

/**
 * sha256 hex of `text`'s UTF-8 bytes: the digest composition takes over canonical JSON and over a
 * user list. A long text (a user list of 50,000 users is 20 MiB) is encoded into a Buffer first:
 * Hash.update with a string that long took five times what encoding it and hashing the bytes take.
 * A long text that is all ASCII (a user list nearly always) is hashed as latin1, whose bytes are
 * then its UTF-8 bytes, without a Buffer: encoding 23 MiB took 100 ms of a 10,000-node composition.
 */
export function sha256(text: string): string {
  // A short text (a declaration's canonical JSON) by crypto.hash: one call, no Hash object.
  if (text.length <= HASH_AS_BYTES) return hash("sha256", text, "hex");
  // As many UTF-8 bytes as code units: every one is below 0x80 (any other takes two bytes or more).
  if (Buffer.byteLength(text, "utf8") === text.length) return createHash("sha256").update(text, "latin1").digest("hex");
  return createHash("sha256").update(Buffer.from(text, "utf8")).digest("hex");
}

export const REDACTED = "[redacted]";

/**
 * A copy of a declaration with every secret redacted (sealed fields). The user list travels beside
 * the declaration, which names it by digest, size and part count only: no hash is in it.
 */
export function redactDeclaration(declaration: Declaration): Declaration {
  const walk = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(walk);
    if (value !== null && typeof value === "object") {
      const out: Record<string, unknown> = {};
      for (const [key, inner] of Object.entries(value)) out[key] = key === "sealed" || key === "password" || key === "seed" ? REDACTED : walk(inner);
      return out;
    }
    return value;
  };
  return walk(declaration) as Declaration;
}

/** What composeDeclarations gives: the user list and every node's declaration. */
export type Composition = ReturnType<typeof composeDeclarations>;

/**
 * The last composition and what it was composed from (newCompositionMemo, composeRemembered).
 * A cache, not a record: it holds nothing the records do not give again.
 *
 * It rests on one assumption about every fold (evolve, startFold's draft and fresh fold, and any fold
 * written later in their place): a fold never changes a state slice, or anything reachable from
 * one, in place. A slice an event touches comes out as a new object; a slice no event touched is
 * the same object, unchanged. A fold that changed a slice in place and kept its identity would
 * make this memo hand back the composition of records that are gone. A copy-on-write written by
 * hand must keep this too: the unit test "over a churning history folded every way the controller
 * folds ..." (test/unit/push.test.ts) compares the remembered composition with a fresh one after
 * every batch of a generated history, and fails on the first stale one.
 */
export type CompositionMemo = { last: { inputs: readonly unknown[]; composition: Composition } | null };

/** An empty CompositionMemo. */
export function newCompositionMemo(): CompositionMemo {
  return { last: null };
}

/**
 * Everything composition reads: the state's slices it derives from (not `sent`, `applied` or
 * `sequence`), the configuration and the digest function. A fold never changes a slice in place
 * (CompositionMemo's assumption): evolve copies on write (a slice no event touched is the same
 * object, one an event changed is a new one: immer, projections/fold.ts) and a fold from sequence 1 returns
 * objects of its own. So equal inputs, compared by identity, are the same records as far as
 * composition can see. A slice composition starts to read must be added here.
 */
function compositionInputs(state: State, config: ComposeConfig, digest: (text: string) => string, reports?: OverlapReports): unknown[] {
  // R73: the reports count only through the overlaps they leave open (a string: compared by value).
  return [state.mesh, state.nodes, state.modules, state.credentials, state.assignments, state.overlay, state.provisions, config, digest, openOverlaps(state, reports).join(" ")];
}

/**
 * composeDeclarations(state, config, sha256), or the memo's last composition when its inputs are
 * the same objects (compositionInputs): composition is a pure function of them, so it could only
 * give that result again. A push that recorded only what it sent (DeclarationSent folds into
 * `sent`) composes nothing the next time. Without a memo, composes.
 */
export function composeRemembered(memo: CompositionMemo | undefined, state: State, config: ComposeConfig, reports?: OverlapReports): Composition {
  const inputs = compositionInputs(state, config, sha256, reports);
  const last = memo?.last;
  if (last && last.inputs.length === inputs.length && last.inputs.every((input, i) => input === inputs[i])) return last.composition;
  const composition = composeDeclarations(state, config, sha256, reports);
  if (memo) memo.last = { inputs, composition };
  return composition;
}
