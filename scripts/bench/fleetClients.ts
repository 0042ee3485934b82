/**
 * The fleet bench's connections, spread over child processes (fleetWorker.ts): connection `i` lives
 * in worker `i mod workers`. One Node process holding 10,000 TLS connections does every handshake
 * of a reconnect storm on one event loop, and the storm measured that loop rather than the bus (at
 * 10,000 neither the mesh's clients nor raw nats.js came back). Both sides of the bench use the same
 * number of workers.
 */
import { fork, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import type { BusCredential } from "../../src/bus/connect.ts";
import type { DialSpec, FleetShare, WorkerReply, WorkerRequest } from "./fleetWorker.ts";

/** Dials in flight at once over all workers while the fleet first connects. */
export const CONCURRENCY = 64;

/** What the whole fleet saw since the mark (every worker's share summed). */
export type FleetStatus = Omit<FleetShare, "backAt"> & {
  /** The last connection back (epoch ms), or 0 when none is. */
  lastBackAt: number;
  /** Connections back per second since `since` (index 0: the first second). */
  perSecond: number[];
};

type Worker = { child: ChildProcess; ask(request: WorkerRequest): Promise<WorkerReply> };

function startWorker(): Worker {
  const child = fork(join(import.meta.dirname, "fleetWorker.ts"), [], { execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const waiting: Array<(reply: WorkerReply) => void> = [];
  child.on("message", (reply: WorkerReply) => waiting.shift()?.(reply));
  child.on("exit", (code, signal) => {
    for (const wake of waiting.splice(0)) wake({ type: "failed", error: `the fleet worker exited (${signal ?? `code ${code}`})` });
  });
  return {
    child,
    ask: (request) => new Promise((resolve) => {
      waiting.push(resolve);
      child.send(request);
    }),
  };
}

function expect<T extends WorkerReply["type"]>(reply: WorkerReply, type: T): Extract<WorkerReply, { type: T }> {
  if (reply.type === "failed") throw new Error(`fleet worker: ${reply.error}`);
  if (reply.type !== type) throw new Error(`fleet worker answered ${reply.type}, not ${type}`);
  return reply as Extract<WorkerReply, { type: T }>;
}

/** A fleet of connections held by child processes. */
export type ClientFleet = {
  size: number;
  /** Milliseconds until every connection was first open (the workers' own start not counted). */
  connectMs: number;
  /** First dials that failed and were tried again. */
  retries: number;
  /** Takes the current counts as the baseline; `exclude` (indexes) are left out from now on. */
  mark(exclude?: number[]): Promise<void>;
  /** What happened since the mark; `since` (epoch ms) is the start of perSecond's first second. */
  status(since?: number): Promise<FleetStatus>;
  /** Closes every connection and ends the workers. */
  close(): Promise<void>;
};

/**
 * Forks `workers` child processes and dials `credentials` (connection i as index i) from them, at
 * most CONCURRENCY at a time in all; `side` says how (fleetWorker.ts). Throws when a dial failed
 * five times.
 */
export async function startFleet(
  workers: number,
  credentials: readonly BusCredential[],
  side: { side: "mesh" } | { side: "raw"; port: number; pem: string },
): Promise<ClientFleet> {
  const pool = Array.from({ length: Math.min(workers, credentials.length) }, startWorker);
  const close = async () => {
    await Promise.all(pool.map(async (w) => {
      if (w.child.exitCode === null && w.child.connected) await w.ask({ type: "close" }).catch(() => undefined);
    }));
  };
  try {
    // Each worker's start (a Node process loading tsx and the client) is not part of the connect.
    for (const reply of await Promise.all(pool.map((w) => w.ask({ type: "status" })))) expect(reply, "status");
    const started = performance.now();
    const replies = await Promise.all(pool.map((w, k) => {
      const mine = credentials.flatMap((credential, index) => (index % pool.length === k ? [{ index, credential }] : []));
      const concurrency = Math.max(1, Math.floor(CONCURRENCY / pool.length));
      const spec: DialSpec = side.side === "mesh" ? { side: "mesh", credentials: mine, concurrency } : { ...side, credentials: mine, concurrency };
      return w.ask({ type: "dial", spec });
    }));
    const retries = replies.reduce((sum, reply) => sum + expect(reply, "dialled").retries, 0);
    const connectMs = performance.now() - started;
    return {
      size: credentials.length,
      connectMs,
      retries,
      async mark(exclude = []) {
        for (const reply of await Promise.all(pool.map((w) => w.ask({ type: "mark", exclude })))) expect(reply, "marked");
      },
      async status(since = 0) {
        const shares = (await Promise.all(pool.map((w) => w.ask({ type: "status" })))).map((reply) => expect(reply, "status").share);
        const backAt = shares.flatMap((s) => s.backAt);
        const perSecond: number[] = [];
        for (const at of backAt) {
          const second = Math.max(0, Math.floor((at - since) / 1000));
          while (perSecond.length <= second) perSecond.push(0);
          perSecond[second]! += 1;
        }
        const sum = (key: "size" | "back" | "dropped" | "unaware" | "closedNotBack" | "attempts") => shares.reduce((total, s) => total + s[key], 0);
        return {
          size: sum("size"), back: sum("back"), dropped: sum("dropped"), unaware: sum("unaware"), closedNotBack: sum("closedNotBack"), attempts: sum("attempts"),
          lastBackAt: backAt.length === 0 ? 0 : Math.max(...backAt),
          perSecond,
        };
      },
      close,
    };
  } catch (error) {
    await close();
    for (const w of pool) if (w.child.exitCode === null) w.child.kill();
    throw error;
  }
}
