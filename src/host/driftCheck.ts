import type { HostReport } from "../contracts/report.ts";
import { recheckOwned } from "./apply.ts";
import { carryUnsent, driftedReport, firstLine } from "./plan.ts";
import type { Reporter } from "./reporter.ts";
import type { AgentLink } from "./agentLink.ts";

/** What a DriftCheck needs from its agent. */
export type DriftCheckContext = {
  node: string;
  stateDir: string;
  privateKey: string;
  link: AgentLink;
  reportsOut: Reporter;
  log: (line: string) => void;
};

/**
 * R55: the files of the last applied declaration, checked again (at start, then every
 * checkIntervalMs): drift is written back, logged and reported (now when bound, else at the next
 * bind, takeUnsent). Its own state: the drift found while not bound.
 */
export class DriftCheck {
  /** The drift re-checks found while not bound, published at the next bind (R55), each one's files kept. */
  private unsent: HostReport | undefined;

  constructor(private readonly context: DriftCheckContext) {}

  /** One re-check; skipped while a declaration is being applied (it would write the previous one back). Never throws. */
  check(when: "start" | "interval"): void {
    const { node, stateDir, privateKey, link, reportsOut, log } = this.context;
    if (link.busy || link.stopped) return;
    let found: ReturnType<typeof recheckOwned>;
    try {
      found = recheckOwned(stateDir, privateKey, link.certificatePem);
    } catch (error) {
      log(`host ${node}: re-check (${when}) of its files failed: ${firstLine(error)}`);
      return;
    }
    if (!found || found.drift.length === 0) return;
    const { report: drifted, line } = driftedReport(node, found.last.report, found.drift, when);
    log(line);
    if (link.current && link.bound) void reportsOut.send(link.current.nc, drifted);
    else this.unsent = carryUnsent(this.unsent, drifted);
  }

  /** The drift found while not bound, once (the caller sends it at the bind). */
  takeUnsent(): HostReport | undefined {
    const unsent = this.unsent;
    this.unsent = undefined;
    return unsent;
  }
}
