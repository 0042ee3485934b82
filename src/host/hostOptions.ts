import type { HostObserver } from "../metrics/host.ts";
import type { BusCredential } from "../bus/connect.ts";
import type { HostReport } from "../contracts/report.ts";
import type { Applied } from "./apply.ts";
import type { BusReloadOptions } from "./busList.ts";
import type { RunnerOptions } from "./runner.ts";

/** The host agent's settings and handle (agent.ts, startHost). */

/** Caller settings of startHost. */
export type HostOptions = {
  /** The node's state folder: its key (`node.key`), `owned.json` and the resources it applies. */
  stateDir: string;
  /** The node's mesh name (its consumer is `declarationConsumer(node)`). */
  node: string;
  /** The node's bus credential, or a function read at every connection attempt (a rotated file). */
  credential: BusCredential | (() => BusCredential);
  /**
   * Where the host saves its own credential when a declaration carries a new one (`self`, after a
   * `mesh credential rotate node`), 0600, atomically; from then on every connection attempt and
   * every reconnect reads it from there. Default: `<stateDir>/credential.json`.
   */
  credentialFile?: string;
  /**
   * Present on the node holding mesh-broker: where the user list goes and how the bus reloads. On
   * a cluster every server's (R60): each is installed and reloaded in turn, and the report names
   * each one's outcome (`servers`); the list counts as applied when at least one server took it.
   */
  bus?: BusReloadOptions | readonly BusReloadOptions[];
  /** One line per event (connected, applied, retrying); never a seed (R3). Default: stderr. */
  log?: (line: string) => void;
  /** Called after each declaration was handled and its report published. */
  onReport?: (report: HostReport, applied: Applied | undefined) => void;
  /**
   * Retry delays in milliseconds: first, doubled per attempt up to max (default 500 and 30,000;
   * at most NEW_NODE_BACKOFF_MAX_MS until the bus first admitted the node, R1).
   */
  backoff?: { initialMs?: number; maxMs?: number };
  /** Milliseconds to wait for one connection (default HOST_DIAL_TIMEOUT_MS, 30,000). */
  connectTimeoutMs?: number;
  /**
   * Called each time the bus refuses this node's credential (authorization), with the line saying
   * why and what to do (refusedAdvice). The agent keeps retrying; `mesh host --once` stops on it.
   */
  onRefused?: (advice: string) => void;
  /**
   * R55: milliseconds between re-checks of the files the last applied declaration owns (default
   * 60,000; 0: only the check at start). Drift is written back, logged, and reported on the bus as
   * that declaration's report with `drift` naming the files.
   */
  checkIntervalMs?: number;
  /** Hears the agent's connections and stored reports (src/metrics/host.ts, `mesh host --metrics`). */
  metrics?: HostObserver;
  /** R72: the module runner's restart pauses (tests shorten them); see RunnerOptions. */
  runner?: Pick<RunnerOptions, "restart" | "onPath">;
};

/** R72: the least pause between two reports published because a module's run state changed. */
export const RUN_STATE_REPORT_MIN_MS = 500;

/** A running host. */
export type Host = {
  /** Stops consuming, closes the connection and waits for the loop to end. Idempotent. */
  stop(): Promise<void>;
  /** Every report published so far, oldest first (a live array). */
  readonly reports: readonly HostReport[];
  /**
   * Every report, from the first one, as an async iterable (each iteration starts at the beginning
   * and ends when the host stops).
   */
  readonly applied: AsyncIterable<HostReport>;
  /** Resolves with the first report of `digest` (ok or not); rejects after `timeoutMs` (default 10,000). */
  waitForReport(digest: string, timeoutMs?: number): Promise<HostReport>;
  /** True while the host holds a bound consumer on a live connection. */
  bound(): boolean;
};

