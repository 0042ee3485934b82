/**
 * A host agent's Prometheus metrics (issue 30), on a registry of its own (several agents may run
 * in one test process): `mesh_host_declarations_total{outcome}` (applied or refused: every
 * declaration report), `mesh_host_reconnects_total` (the client's reconnects and the agent's
 * dials after the first), `mesh_host_report_publishes_total` (reports the bus stored: declaration,
 * restated and drift reports alike) and `mesh_host_modules{state}` (modules by run state, fed by
 * the agent whenever its module runner's states change, R72).
 */
import { Counter, Gauge, Registry } from "prom-client";
import type { NatsConnection } from "@nats-io/transport-node";

/** Modules by run state (`running`, `starting`, `backing-off`, `stopped`, ...): the runner's own words. */
export type ModuleRunCounts = Readonly<Record<string, number>>;

/** What the agent tells its metrics (HostOptions.metrics). */
export type HostObserver = {
  /** A connection the bus admitted: its reconnects are counted, and every admission after the first. */
  connected(nc: NatsConnection): void;
  /** A report the bus stored. */
  reportPublished(): void;
  /** The modules by run state, whenever one changes (R72): replaces the gauge (absent states read 0). */
  setModuleRunStates(counts: ModuleRunCounts): void;
};

/** A host agent's metrics: its registry, the agent's observer, and what the CLI and the runner feed. */
export type HostMetrics = HostObserver & {
  readonly registry: Registry;
  /** A declaration's report: `ok` counts applied, otherwise refused. */
  declarationReported(report: { ok: boolean }): void;
};

/** New host metrics on a fresh registry. */
export function hostMetrics(): HostMetrics {
  const registry = new Registry();
  const registers = [registry];
  const declarations = new Counter({ name: "mesh_host_declarations_total", help: "Declarations handled, by outcome (applied, refused).", labelNames: ["outcome"], registers });
  const reconnects = new Counter({ name: "mesh_host_reconnects_total", help: "Reconnections to the bus: the client's own and the agent's dials after the first admitted one.", registers });
  const publishes = new Counter({ name: "mesh_host_report_publishes_total", help: "Reports the bus stored (declaration, restated and drift reports).", registers });
  const modules = new Gauge({ name: "mesh_host_modules", help: "Modules assigned to this node by run state, as the module runner last said.", labelNames: ["state"], registers });
  // Both outcomes read 0 before the first declaration: a rate over them is defined from the start.
  declarations.inc({ outcome: "applied" }, 0);
  declarations.inc({ outcome: "refused" }, 0);
  let admitted = 0;
  const metrics: HostMetrics = {
    registry,
    connected(nc) {
      if (admitted++ > 0) reconnects.inc();
      void (async () => {
        for await (const status of nc.status()) if (status.type === "reconnect") reconnects.inc();
      })().catch(() => undefined);
    },
    reportPublished: () => publishes.inc(),
    declarationReported: (report) => declarations.inc({ outcome: report.ok ? "applied" : "refused" }),
    setModuleRunStates(counts) {
      modules.reset();
      for (const [state, count] of Object.entries(counts)) modules.set({ state }, count);
    },
  };
  return metrics;
}
