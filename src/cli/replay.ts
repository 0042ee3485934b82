/**
 * `mesh replay`: the records folded from sequence 1, ignoring snapshots, validated and reported
 * (R44); `--void <seq> --reason <why>` voids the commit the fold stopped at (R45); `--dry-run` with
 * --void or --accept-restore shows the commit that would be appended, appending nothing. Sent through
 * busVerb (the CLI's one send path) as the `replay` verb.
 */
import { verbUsageError } from "./context.ts";
import { busVerb, pendingSeedNote, saveOwnRotation, type CliVerb } from "./busVerb.ts";

type Row = Record<string, unknown>;

/** `--void <seq>`: a whole number from 1, else a usage error naming the flag. */
function sequenceOf(value: unknown): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw verbUsageError("replay", "--void", "the sequence of a commit, a whole number from 1");
  return n;
}

/** The readable lines of a replay reply (a report, or a void's answer). */
export function renderReplay(r: Row): string[] {
  const stopped = r.stoppedAt as { sequence: number; types: string[]; reason: string } | null | undefined;
  const lines: string[] = [];
  if (r.accepted === true) {
    const lost = r.lost as { from: number; to: number } | null;
    const rotated = (Array.isArray(r.rotated) ? r.rotated : []) as Array<{ kind: string; name: string }>;
    const count = Array.isArray(r.rotated) ? rotated.length : Number((r.rotated as { count?: number } | undefined)?.count ?? 0);
    lines.push(`accepted the records as restored (commit at ${String(r.sequence)})${lost ? `: sequences ${lost.from}..${lost.to} are lost` : ""}`);
    // R64: a node is minted no key; the acceptance keeps the one the list the bus ran holds for it.
    const minted = rotated.filter((p) => p.kind !== "node");
    const nodes = rotated.filter((p) => p.kind === "node");
    if (Array.isArray(r.rotated)) {
      lines.push(`fresh keys for ${minted.length} principal(s), installed by the next push${minted.length ? `: ${minted.map((p) => `${p.kind} ${p.name}`).join(", ")}` : ""}`);
      if (nodes.length > 0) lines.push(`nodes keep their own key, the one the list the bus ran holds (R64): ${nodes.map((p) => `node ${p.name}`).join(", ")}`);
    } else {
      lines.push(`fresh keys for ${count} principal(s) (nodes keep their own), installed by the next push`);
    }
    const provisions = (Array.isArray(r.freshProvisions) ? r.freshProvisions : []) as Array<{ seat: string; provision: string; consumer: string }>;
    const provisionCount = Array.isArray(r.freshProvisions) ? provisions.length : Number((r.freshProvisions as { count?: number } | undefined)?.count ?? 0);
    if (provisionCount > 0) {
      lines.push(`fresh provision secrets for ${provisionCount} provision(s), delivered by the next push to the nodes that run their consumer or hold their seat (none while neither runs anywhere)${provisions.length ? `: ${provisions.map((p) => `${p.provision} of ${p.seat} for ${p.consumer}`).join(", ")}` : ""}`);
    }
    const revoked = (Array.isArray(r.revoked) ? r.revoked : []) as Array<{ kind: string; name: string }>;
    if (revoked.length > 0) lines.push(`revoked (the bus ran without them): ${revoked.map((p) => `${p.kind} ${p.name}`).join(", ")}`);
    if (typeof r.nodeKeys === "string") lines.push(`node keys ${r.nodeKeys}`);
    const unknown = (r.unknownToRecords ?? []) as string[];
    if (typeof r.saved === "string") lines.push(...pendingSeedNote(r.saved));
    const absent = (r.absentFromInstalledList ?? []) as Array<{ kind: string; name: string; why: string; next: string }>;
    if (absent.length > 0) {
      const said = [
        ...(absent.some((p) => p.kind !== "node") ? ["a module, operator or builder gets a fresh key, handed to nobody here"] : []),
        // R64: nobody can mint a node a key: the node makes one itself, and its line says what to run.
        ...(absent.some((p) => p.kind === "node") ? ["a node gets no key from the mesh (it makes its own, R64) and its key is revoked"] : []),
      ];
      lines.push(`in the records but NOT on the list the bus runs (removed after the backup, or enrolled and never pushed); ${said.join("; ")}:`);
      for (const p of absent) lines.push(`  ${p.kind} ${p.name}: ${p.next}`);
      if (typeof r.absentLeftOut === "number") lines.push(`  and ${r.absentLeftOut} more`);
    }
    if (unknown.length > 0) lines.push(`on the bus's installed list but unknown to the records (the next push drops them; enrol again what should stay): ${unknown.join(", ")}`);
    if (typeof r.next === "string") lines.push(r.next);
    return lines;
  }
  if (r.voided !== undefined) {
    lines.push(`voided the commit at sequence ${String(r.voided)} (voiding commit at ${String(r.sequence)}); the records fold to ${String(r.lastSequence)}`);
  } else {
    const counts = (r.counts ?? {}) as Record<string, number>;
    const verdict = r.valid === true ? "every commit valid" : r.unsafe !== undefined && r.stoppedAt === undefined ? "NOT valid: the records erase commits" : "a commit stops the fold";
    lines.push(`records folded from sequence 1 (snapshots ignored) to sequence ${String(r.lastSequence)}: ${verdict}`);
    if (typeof r.digest === "string") lines.push(`state digest: ${r.digest}${r.matchesServing === true ? " (the controller serves the same state)" : r.matchesServing === false ? " (DIFFERS from the state the controller serves)" : ""}`);
    lines.push(`counts: ${Object.entries(counts).map(([k, v]) => `${v} ${k}`).join(", ")}`);
  }
  const unsafe = r.unsafe as { setting: string; message: string } | undefined;
  if (unsafe) lines.push(unsafe.message);
  const behind = r.behind as Array<{ kind: string; detail: string }> | undefined;
  if (behind && behind.length > 0) {
    lines.push("the records are behind what the world has seen (R43):");
    for (const e of behind) lines.push(`  ${e.kind}: ${e.detail}`);
    lines.push("accept them as they are with `mesh replay --accept-restore`: every principal gets a fresh key at the next push (R44), but the nodes, which keep their own (R64)");
  }
  if (stopped) {
    lines.push(`stopped at sequence ${stopped.sequence} (${stopped.types.join(", ") || "no event type"}): ${stopped.reason}`);
  }
  if (r.changed === false) lines.push("nothing changed");
  return lines;
}

export const REPLAY_CLI_VERB: CliVerb = busVerb({
  path: ["replay"], verb: "replay",
  examples: [["fold the records from sequence 1 and report them", "mesh replay"], ["void one record", "mesh replay --void 42 --reason \"entered by mistake\""]],
  // --void and --accept-restore append a commit: --dry-run shows it. The bare report changes nothing.
  dryRun: true,
  options: [
    { flags: "--void <seq>", description: "void the commit at this sequence (the one the fold stops at); needs --reason" },
    { flags: "--reason <why>", description: "why it is voided (kept in the records)" },
    { flags: "--accept-restore", description: "accept the records as they are after a restore: every principal but the nodes (they keep their own key) gets a fresh key at the next push" },
  ],
  body: (_a, o) => {
    if (o.acceptRestore === true) return { acceptRestore: true };
    if ((o.void === undefined) !== (o.reason === undefined)) throw verbUsageError("replay", undefined, "--void and --reason go together");
    return o.void === undefined ? {} : { void: sequenceOf(o.void), reason: String(o.reason) };
  },
  spelled: { void: "--void", reason: "--reason", acceptRestore: "--accept-restore", dryRun: "--dry-run" },
  render: renderReplay,
  // --accept-restore rotates the asker's own credential too: kept as <file>.next, never printed (R50, R3).
  receive: saveOwnRotation,
});
