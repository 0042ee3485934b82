import type { OpenOverlap } from "../compose/overlap.ts";
import { setTimeout as sleep } from "node:timers/promises";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Catalogue } from "../records/catalogue.ts";
import type { Refusal } from "../commands/envelope.ts";
import type { Declaration } from "../compose/declaration.ts";
import type { ComposeConfig, LeftOut, Principal } from "../compose/types.ts";
import type { RaiseMemo, RaiseReport } from "../controller/raise.ts";
import type { ControllerCredential } from "../controller/credential.ts";
import type { NodeReport, ProvisionName } from "./plan.ts";
import type { CompositionMemo } from "./composition.ts";
import type { ReportHub } from "../bus/reports.ts";

/** What a push is given and what it gives back: its context, its options, its report (R12, R30, R32). */

/** Default milliseconds `--wait` waits for reports. */
export const DEFAULT_WAIT_MS = 30_000;

/**
 * The time a push's waits for reports read (R32): `now` in milliseconds, and `sleep`, a pause that
 * `signal` cuts short (a report arrived). Tests pass a clock of their own to see how long a push
 * would wait without waiting it.
 */
export type WaitClock = { now(): number; sleep(ms: number, signal: AbortSignal): Promise<void> };

/** The system's clock and timers. */
export const SYSTEM_CLOCK: WaitClock = {
  now: () => Date.now(),
  sleep: (ms, signal) => sleep(ms, undefined, { signal }).catch(() => undefined),
};

/** Where push writes what it did. Lines never contain a password, hash or sealed secret (R3). */
export type PushLog = { info(line: string): void; error(line: string): void };

/** What push needs from the controller: the bus, the records, the mesh key, and its own credential. */
export type PushContext = {
  nc: NatsConnection;
  catalogue: Catalogue;
  /** The mesh key (base64 of 32 bytes): opens the records' secrets, seals fresh ones. */
  meshKey: string;
  compose: ComposeConfig;
  log: PushLog;
  now?: () => Date;
  newId?: () => string;
  /** The controller's own credential: rotated off the genesis key on the first push with a broker (R14), switched by any rotation of it (R50). */
  controller?: ControllerCredential;
  /** The clock of the waits for reports (default SYSTEM_CLOCK). */
  clock?: WaitClock;
  /** Called for progress on long pushes: `done` of `total` declarations sent. */
  progress?: (done: number, total: number) => void;
  /**
   * Node-sealed secrets kept across pushes, by node key and mesh-key form: a secret unchanged for a
   * node is sent in the form it was sent before instead of being sealed again (the controller keeps
   * one for its life; bounded by SEAL_CACHE_LIMIT).
   */
  sealCache?: Map<string, string>;
  /** What earlier raises verified (RaiseMemo): the controller keeps one for its life, so a push's raise reads only consumer names. */
  raiseMemo?: RaiseMemo;
  /** The last composition (CompositionMemo): the controller keeps one for its life, so a push over records that changed nothing composition reads composes nothing. */
  compositionMemo?: CompositionMemo;
  /**
   * R60: broker holders whose report, heard by this controller in a push, named a server that
   * missed the user list; the controller keeps one for its life. The next push sends them their
   * list again even when REPORTS never stored that report (the host's publish timed out while the
   * cluster moved leaders); a heard report with every server installed takes the holder off.
   */
  listRepairs?: Set<string>;
  /** The process's one subscription to the report subjects (bus/reports.ts reportHub); without it a push that waits for reports subscribes for itself. */
  reports?: ReportHub;
  /** When given, push adds the milliseconds each step took (raise, mint, compose, reports, seal, publish, record, wait). */
  timings?: Record<string, number>;
};

/** Caller settings of one push. */
export type PushOptions = {
  /** Nodes to send even when they are not behind (R31: the behind ones are sent too). */
  nodes?: readonly string[];
  /** Wait for each sent node's report of the applied digest (R32). */
  wait?: boolean;
  /**
   * Milliseconds the push waits for reports in all (default DEFAULT_WAIT_MS): its waits (the
   * broker's report in a round, a rotated controller key's confirmation, `wait`'s) share one
   * deadline, set when the first begins (R32).
   */
  timeoutMs?: number;
  /** Compose and report, secrets redacted; mint, raise and send nothing (the provisions a push would mint count in provisionsMinted). */
  dryRun?: boolean;
  /** This push's progress hook (the asker's progress lines); default ctx.progress. */
  progress?: (done: number, total: number) => void;
};


/** What one push did (R12, R30, R32). */
export type PushReport = {
  pushId: string;
  dryRun: boolean;
  /** The records sequence the last round composed from. */
  recordsSequence: number;
  nodes: NodeReport[];
  /** Principals left out of the user list, and why (R12). */
  leftOut: LeftOut[];
  /**
   * Why no user list reached the bus, when none did: the list's own refusal (a list with no users,
   * R12), `no-broker-holder` (nothing holds mesh-broker) or `user-list-undelivered` (every holder's
   * declaration was refused or failed) (R49). The CLI exits non-zero when it is set.
   */
  userList?: Refusal;
  /**
   * Principals whose credential was rotated after the records sequence the broker's last user list
   * was composed from: this push's list is the first to carry their fresh credentials, and the bus
   * refuses their old keys once it is installed (R48, R50). Sorted by kind, then name.
   */
  freshCredentials: Principal[];
  /**
   * R73: principals (rotated modules) whose previous key this push's user list still admits beside
   * the new one, each with the nodes whose report of the new one ends that: the push after it drops it.
   */
  overlaps?: OpenOverlap[];
  /**
   * Provisions whose secret was rotated (a node removal, an accepted restore: R48, R44) and that
   * this push's declarations are the first to carry to a node receiving or granting them
   * (freshProvisions): the provider grants only the fresh secret once it applies. Sorted by key.
   */
  freshProvisions: ProvisionName[];
  /** Provisions minted before composing (R31). */
  provisionsMinted: number;
  /**
   * The controller switched to a rotated key of its own (R14, R50): `applied` once the broker
   * applied the list carrying it (the credential file then holds it), `pending` until then.
   */
  controllerRotation?: "applied" | "pending";
  raised: { created: number; updated: number; refused: RaiseReport["refused"] };
  /** Nodes that did not report within the wait (R32). */
  timedOut: string[];
  /** Compose-and-send rounds run; `boundHit` when the node-count bound stopped them (R31). */
  rounds: number;
  boundHit: boolean;
  /** Dry run only: each composition, secrets redacted. */
  declarations?: Declaration[];
  /**
   * R60, on a cluster: each server's outcome of the user list a broker holder applied in this push
   * (installed, or missed with why), in server order. A missed server is named here, and the next
   * push sends that holder its list again (its report as this controller heard it, listRepairs, or
   * as REPORTS stored it, missedServersOf), which repairs it.
   */
  servers?: ServerListLine[];
};

/** One server's outcome of a user list in a push report (R60), with the broker holder that installed it. */
export type ServerListLine = { node: string; server: string; ok: boolean; changed?: boolean; error?: string };
