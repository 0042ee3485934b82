import type { NatsConnection } from "@nats-io/transport-node";
import { jetstream, StorageType } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import { CONTROLLER_LEASE_BUCKET, CONTROLLER_LEASE_KEY } from "../names.ts";
import type { ControllerLog } from "./log.ts";
import { errorLine } from "../bus/total.ts";
import { isTimeout, isWrongLastSequence } from "../bus/errors.ts";
import { BUS_READY_DELAYS_MS, pollUntil, retryJetStream } from "../bus/retry.ts";

/**
 * One controller active at a time (R61): a lease in a KV bucket. The value names the holder and
 * the time its lease ends (the holder's clock, ms since the epoch); every write is a
 * compare-and-set on the revision read (create when there is none), so two controllers can never
 * both hold it. The holder renews on its own timer; a standby reads the lease, and once its time
 * has passed takes it over by compare-and-set on the revision it read: it does not wait for the key
 * to vanish (on 2.9.x an R3 bucket's max_age expiry lags on some replicas). The lease is the rule
 * that keeps one writer; fenced appends (R40) stay the safety net.
 */

/** The lease's value. */
export type LeaseValue = { holder: string; expiresAt: number };

/** What the bucket holds: nothing (null), or the value (null when unreadable) and its revision. */
export type LeaseEntry = { value: LeaseValue | null; revision: number } | null;

/** What a controller does next with the lease (decideLease). */
export type LeaseStep =
  | { kind: "create"; value: LeaseValue }
  | { kind: "update"; revision: number; value: LeaseValue }
  | { kind: "wait"; holder: string; expiresAt: number };

/**
 * The next step of controller `me` at `nowMs` with a lease of `leaseMs`, given what the bucket
 * holds: create it when there is none; renew it when `me` holds it; take it over (compare-and-set
 * on the revision read) when its time has passed or its value is unreadable; else wait until its
 * time. Pure (R61).
 */
export function decideLease(entry: LeaseEntry, me: string, nowMs: number, leaseMs: number): LeaseStep {
  const value = { holder: me, expiresAt: nowMs + leaseMs };
  if (entry === null) return { kind: "create", value };
  if (entry.value === null || entry.value.holder === me || entry.value.expiresAt <= nowMs) {
    return { kind: "update", revision: entry.revision, value };
  }
  return { kind: "wait", holder: entry.value.holder, expiresAt: entry.value.expiresAt };
}

/** Reads a lease value; null when it is not one (then it can be taken over). Pure. */
export function parseLeaseValue(text: string): LeaseValue | null {
  try {
    const json = JSON.parse(text) as Partial<LeaseValue>;
    if (typeof json.holder === "string" && typeof json.expiresAt === "number") return { holder: json.holder, expiresAt: json.expiresAt };
  } catch {
    // not JSON: taken over like an expired one
  }
  return null;
}

/** How often a lease is renewed and read, and how long one of its requests may take (leaseTimings). */
export type LeaseTimings = { renewEveryMs: number; pollEveryMs: number; requestTimeoutMs: number };

/**
 * The lease's rhythm for a lease of `leaseMs` (R61, R77): the holder renews every third of it; a
 * standby reads it every eighth, at most every 250 ms and at least every 50 ms, so it takes over
 * within a quarter second of its end; a read or renewal gives up after a third of the lease (at
 * least 250 ms, at most 5 s), so one whose answer was lost (its server died) is made again before
 * the lease runs out. Pure.
 */
export function leaseTimings(leaseMs: number): LeaseTimings {
  const third = Math.max(1, Math.floor(leaseMs / 3));
  return {
    renewEveryMs: third,
    pollEveryMs: Math.max(50, Math.min(250, Math.floor(leaseMs / 8))),
    requestTimeoutMs: Math.min(5_000, Math.max(250, third)),
  };
}

/**
 * What the holder does at a renewal tick (R61): `lost` once its lease's own end has passed, even
 * while a renewal is still unanswered (a standby may take over from then on); `wait` while one is;
 * else `renew`. Pure.
 */
export function holderTick(tick: { now: number; expiresAt: number; renewing: boolean }): "lost" | "wait" | "renew" {
  if (tick.now >= tick.expiresAt) return "lost";
  return tick.renewing ? "wait" : "renew";
}

/** A lease this controller holds. */
export type HeldLease = {
  holder: string;
  /** Stops renewing and ends the lease now (compare-and-set; a lease already lost is left alone). */
  release(): Promise<void>;
};

/** Caller settings of acquireLease. */
export type LeaseOptions = {
  /** This controller's name in the lease (unique per process). */
  holder: string;
  /** How long the lease lasts unless renewed, in ms (MESH_CONTROLLER_LEASE_MS). */
  leaseMs: number;
  /** Copies of the bucket (MESH_CATALOGUE_REPLICAS). */
  replicas: number;
  log: ControllerLog;
  /** Called once when the lease is lost while held (another took it, or it ran out unrenewed). */
  onLost: (reason: string) => void;
  /**
   * Called when a read or a renewal of the lease got no answer while the connection is up: on a
   * 2.9.10 cluster, a connection that reconnected during a user-list reload can stop getting
   * JetStream replies from the other servers for good, while a fresh connection gets them at once.
   * The caller dials again; without it, a standby would wait forever and a holder lose its lease.
   */
  onStalled?: (what: string) => void;
  /** Called at each poll while standing by (R77: the caller keeps its records folded); must not throw. */
  whileStandingBy?: () => void;
  /** Test clock (default Date.now). */
  now?: () => number;
};

async function readLease(kv: KV): Promise<LeaseEntry> {
  const entry = await kv.get(CONTROLLER_LEASE_KEY);
  if (entry === null) return null;
  // A deleted or purged key has a revision to update on but no value.
  if (entry.operation !== "PUT") return { value: null, revision: entry.revision };
  return { value: parseLeaseValue(entry.string()), revision: entry.revision };
}

/**
 * Waits until this controller holds the lease (R61) and returns it, renewing it from then on at
 * leaseTimings' rhythm. A standby polls at that rhythm too, so it takes over within the lease plus
 * one poll of the holder's last renewal (R77). A renewal that loses the compare-and-set, or a lease
 * whose own time passes unrenewed (a renewal still unanswered included), calls `onLost` once and
 * stops renewing. Throws what the bucket's creation throws once transient failures outlast
 * BUS_READY_DELAYS_MS (JetStreamUnavailable), and an Error when the
 * connection closes while standing by (a standby being stopped).
 */
export async function acquireLease(nc: NatsConnection, options: LeaseOptions): Promise<HeldLease> {
  const now = options.now ?? Date.now;
  // A cluster that just started may answer the bucket's creation late (its leaders are elected).
  const timings = leaseTimings(options.leaseMs);
  const kv = await retryJetStream("opening the controllers' lease bucket",
    () => new Kvm(jetstream(nc, { timeout: timings.requestTimeoutMs })).create(CONTROLLER_LEASE_BUCKET, { history: 1, replicas: options.replicas, storage: StorageType.File }),
    { delaysMs: BUS_READY_DELAYS_MS });
  const lease: LeaseBucket = { kv, options, now, stalled: stalledOn(nc, options) };
  const taken = await standBy(nc, lease, timings);
  if (taken.closed) throw new Error("the bus connection closed while standing by for the controllers' lease (R61)");
  options.log.info(`holding the controllers' lease as ${options.holder} (R61)`);
  return new Holding(lease, taken, timings).held();
}

/** What the standby and the holder share: the lease's bucket, the caller's settings, the clock, and `stalled`. */
type LeaseBucket = {
  kv: KV;
  options: LeaseOptions;
  now: () => number;
  /** `operation`, with a timeout on a connection that is up said to onStalled (see LeaseOptions). */
  stalled: <T>(operation: Promise<T>, what: string) => Promise<T>;
};

/** The lease as this controller took it: the bucket's revision and when it runs out. */
type Taken = { closed: false; revision: number; expiresAt: number };

/** Wraps an operation on the bucket: a timeout while the connection is up is said to onStalled, then thrown. */
function stalledOn(nc: NatsConnection, options: LeaseOptions): LeaseBucket["stalled"] {
  return async <T>(operation: Promise<T>, what: string): Promise<T> => {
    try {
      return await operation;
    } catch (error) {
      if (isTimeout(error) && !nc.isClosed()) options.onStalled?.(`${what} the controllers' lease got no answer`);
      throw error;
    }
  };
}

/**
 * Polls until this controller took the lease (or the connection closed: `closed`). A standby has
 * no deadline: it waits as long as another controller holds the lease. A throw (another
 * controller won the compare-and-set, or the bus is between leaders) reads again.
 */
async function standBy(nc: NatsConnection, { kv, options, now, stalled }: LeaseBucket, timings: LeaseTimings): Promise<Taken | { closed: true }> {
  let waitingOn = "";
  return pollUntil(async () => {
    // A standby being stopped: its connection closed, so stop polling (said by the caller).
    if (nc.isClosed()) return { closed: true as const };
    const step = decideLease(await stalled(readLease(kv), "reading"), options.holder, now(), options.leaseMs);
    if (step.kind === "wait") {
      if (waitingOn !== step.holder) options.log.info(`standing by: controller ${step.holder} holds the lease (R61)`);
      waitingOn = step.holder;
      options.whileStandingBy?.();
      return undefined;
    }
    const body = JSON.stringify(step.value);
    const written = step.kind === "create" ? await kv.create(CONTROLLER_LEASE_KEY, body) : await kv.update(CONTROLLER_LEASE_KEY, body, step.revision);
    return { closed: false as const, revision: written, expiresAt: step.value.expiresAt };
  }, { everyMs: timings.pollEveryMs, what: "the controllers' lease is free" });
}

/**
 * The lease while this controller holds it: renewed every renewEveryMs (holderTick), lost once
 * (onLost) when another took it or it ran out unrenewed, released at most once.
 */
class Holding {
  private state: "held" | "lost" | "released" = "held";
  private revision: number;
  private expiresAt: number;
  private renewing = false;
  private readonly timer: ReturnType<typeof setInterval>;

  constructor(private readonly lease: LeaseBucket, taken: Taken, timings: LeaseTimings) {
    this.revision = taken.revision;
    this.expiresAt = taken.expiresAt;
    this.timer = setInterval(() => this.tick(), timings.renewEveryMs);
    this.timer.unref?.();
  }

  /** The caller's handle (HeldLease). */
  held(): HeldLease {
    return { holder: this.lease.options.holder, release: () => this.release() };
  }

  /** One tick of the renewal timer: lost when it ran out, a renewal when one is due and none is running. */
  private tick(): void {
    if (this.state !== "held") return;
    const step = holderTick({ now: this.lease.now(), expiresAt: this.expiresAt, renewing: this.renewing });
    if (step === "lost") {
      this.lost("it could not be renewed before it ran out");
      return;
    }
    if (step === "wait") return;
    this.renewing = true;
    // R65: nothing a renewal meets (an unreadable lease, a throwing onLost) ends the process.
    void this.renew().catch((error: unknown) => { this.lease.options.log.error(`renewing the controllers' lease failed: ${errorLine(error)} (R61)`); });
  }

  /** One renewal (compare-and-set on the revision held); `renewing` is false again after it. */
  private async renew(): Promise<void> {
    const { kv, options, now, stalled } = this.lease;
    const value: LeaseValue = { holder: options.holder, expiresAt: now() + options.leaseMs };
    try {
      this.revision = await stalled(kv.update(CONTROLLER_LEASE_KEY, JSON.stringify(value), this.revision), "renewing");
      this.expiresAt = value.expiresAt;
    } catch (error) {
      // A revision mismatch: someone else holds it. Anything else (no bus) is tried again next
      // tick, until the lease's own time has passed.
      if (isWrongLastSequence(error)) await this.checkStillHeld();
      else if (now() >= this.expiresAt) this.lost("it could not be renewed before it ran out");
    } finally {
      this.renewing = false;
    }
  }

  /**
   * After a lost compare-and-set: a renewal whose answer was lost (a stalled connection) still
   * moved the revision, so the lease is still this controller's when the bucket names it.
   */
  private async checkStillHeld(): Promise<void> {
    const { kv, options, now } = this.lease;
    const entry = await readLease(kv).catch(() => null);
    if (entry?.value?.holder === options.holder && entry.value.expiresAt > now()) {
      this.revision = entry.revision;
      this.expiresAt = entry.value.expiresAt;
    } else {
      this.lost("another controller holds it");
    }
  }

  /** Lost while held: once, the renewals stopped, said, and onLost called. */
  private lost(reason: string): void {
    if (this.state !== "held") return;
    this.state = "lost";
    clearInterval(this.timer);
    this.lease.options.log.error(`lost the controllers' lease: ${reason} (R61)`);
    this.lease.options.onLost(reason);
  }

  /** Ends it now so a standby need not wait; compare-and-set, so a lease already lost stays. */
  private async release(): Promise<void> {
    if (this.state !== "held") return;
    this.state = "released";
    clearInterval(this.timer);
    const { kv, options, stalled } = this.lease;
    await stalled(kv.update(CONTROLLER_LEASE_KEY, JSON.stringify({ holder: options.holder, expiresAt: 0 }), this.revision), "releasing").catch(() => undefined);
  }
}
