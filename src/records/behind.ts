/**
 * Latching the records behind the world (R43): one piece of evidence, said once in the log, and
 * the furthest sequence the world saw (for the lost range an accepted restore names, R44). One
 * place for every source of evidence: a host's report (reportWatch) and an asker's `seen` (R68).
 */
import type { Catalogue } from "./catalogue.ts";
import type { BehindEvidence } from "./errors.ts";

/**
 * Latches `catalogue.behind` with `evidence` (the same detail twice is one piece), notes that the
 * world saw records up to `sawUpTo`, and logs one line naming the evidence and `mesh replay` the
 * first time. Never throws.
 */
export function latchBehind(catalogue: Catalogue, evidence: BehindEvidence, sawUpTo: number, log: { error(line: string): void }): void {
  if (catalogue.behind?.some((e) => e.detail === evidence.detail)) return;
  catalogue.reportBehind(evidence);
  catalogue.sawUpTo(sawUpTo);
  log.error(`records behind (R43): ${evidence.detail}; run \`mesh replay\``);
}
