/**
 * The controller's Prometheus metrics (issue 30), on a registry of its own (not prom-client's
 * global one: tests run several controllers in one process). What the shell reports:
 *
 * - commandDone(verb, outcome, seconds): `mesh_controller_commands_total{verb,outcome}` and
 *   `mesh_controller_command_duration_seconds{verb,outcome}` (a verb the registry does not know
 *   is `unknown`: an asker cannot grow the label set);
 * - pushDone: `mesh_controller_pushes_total{outcome}`, `mesh_controller_push_duration_seconds`,
 *   `mesh_controller_push_nodes_total{outcome}` (each node's line of the push's report);
 * - reconnected(): `mesh_controller_reconnects_total`;
 * - read at each scrape from `watch(sources)`: `mesh_controller_nodes{state}` (R78, nodeStates.ts),
 *   `mesh_controller_records_sequence` (the last folded) and `mesh_controller_records_fold_lag`
 *   (the records' last sequence minus the folded one; absent when the stream cannot be asked).
 */
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { isVerb } from "../contracts/verbs.ts";
import { NODE_STATES, nodeStateCounts, type HeardReport } from "./nodeStates.ts";
import type { State } from "../projections/index.ts";

/** Seconds buckets of command and push latencies: a query is milliseconds, a push with --wait up to minutes. */
const COMMAND_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const PUSH_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** What the metrics read at each scrape. */
export type ControllerSources = {
  /** The folded state (its sequence, nodes and what each was last sent). */
  state(): State;
  /** Each node's last report heard, by node. */
  heard(): ReadonlyMap<string, HeardReport>;
  /** The records stream's last sequence, or null when the bus cannot say now. */
  recordsEnd(): Promise<number | null>;
};

/** A push's result as the metrics read it: each node's outcome. */
export type PushResult = { dryRun: boolean; nodes: ReadonlyArray<{ outcome: string }> };

/** The controller's metrics: its registry and what the shell calls. */
export type ControllerMetrics = {
  readonly registry: Registry;
  commandDone(verb: string, outcome: string, seconds: number): void;
  /** One push ended after `seconds`: its report, or null when it threw. */
  pushDone(result: PushResult | null, seconds: number): void;
  reconnected(): void;
  /** Where the gauges read at scrape time; until called they report nothing. */
  watch(sources: ControllerSources): void;
};

/** New controller metrics on a fresh registry. */
export function controllerMetrics(): ControllerMetrics {
  const registry = new Registry();
  const registers = [registry];
  let sources: ControllerSources | undefined;
  const commands = new Counter({ name: "mesh_controller_commands_total", help: "Commands answered, by verb and outcome (ok or the refusal's code).", labelNames: ["verb", "outcome"], registers });
  const commandSeconds = new Histogram({ name: "mesh_controller_command_duration_seconds", help: "Seconds from a command's arrival to its reply, by verb and outcome.", labelNames: ["verb", "outcome"], buckets: COMMAND_BUCKETS, registers });
  const pushes = new Counter({ name: "mesh_controller_pushes_total", help: "Pushes run, by outcome (ok, dry-run, failed: it threw).", labelNames: ["outcome"], registers });
  const pushSeconds = new Histogram({ name: "mesh_controller_push_duration_seconds", help: "Seconds one push took, its wait included.", buckets: PUSH_BUCKETS, registers });
  const pushNodes = new Counter({ name: "mesh_controller_push_nodes_total", help: "Nodes' lines in push reports, by outcome (sent, unchanged, refused, applied, failed, timed-out).", labelNames: ["outcome"], registers });
  const reconnects = new Counter({ name: "mesh_controller_reconnects_total", help: "Reconnections of the controller's bus connection.", registers });
  new Gauge({
    name: "mesh_controller_nodes", help: "Enrolled nodes by state: never-sent, unreported, applied, failed, behind (R78).", labelNames: ["state"], registers,
    collect() {
      this.reset();
      if (!sources) return;
      const counts = nodeStateCounts(sources.state(), sources.heard());
      for (const state of NODE_STATES) this.set({ state }, counts[state]);
    },
  });
  new Gauge({
    name: "mesh_controller_records_sequence", help: "The last records sequence the controller folded.", registers,
    collect() {
      if (sources) this.set(sources.state().sequence);
    },
  });
  new Gauge({
    name: "mesh_controller_records_fold_lag", help: "Commits on the records not folded yet (the stream's last sequence minus the folded one).", registers,
    async collect() {
      this.reset();
      if (!sources) return;
      const end = await sources.recordsEnd().catch(() => null);
      if (end !== null) this.set(Math.max(0, end - sources.state().sequence));
    },
  });
  return {
    registry,
    commandDone(verb, outcome, seconds) {
      const labels = { verb: isVerb(verb) ? verb : "unknown", outcome };
      commands.inc(labels);
      commandSeconds.observe(labels, seconds);
    },
    pushDone(result, seconds) {
      pushes.inc({ outcome: result === null ? "failed" : result.dryRun ? "dry-run" : "ok" });
      if (result === null || result.dryRun) return;
      pushSeconds.observe(seconds);
      for (const node of result.nodes) pushNodes.inc({ outcome: node.outcome });
    },
    reconnected: () => reconnects.inc(),
    watch(given) { sources = given; },
  };
}
