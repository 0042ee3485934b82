/**
 * A child process of the fleet bench (fleetClients.ts): it holds a share of the fleet's connections
 * so that the TLS handshakes of a reconnect storm are spread over several event loops, as they are
 * over many machines in a real mesh, instead of queueing in the bench's own. It answers the parent
 * over the IPC channel (one message in, one out):
 *
 * - `dial`: opens its connections, at most `concurrency` at a time, each retried up to 5 times (a
 *   TLS handshake past the server's timeout under load); answers `dialled` with the retries.
 *   `side: "mesh"` dials as a host agent does (hostDialOptions: connectToBus, the current secret
 *   read at every reconnect, the agent's dial timeout and reconnect pacing); `side: "raw"` with a
 *   plain nats.js client (TLS verified against the certificate, the nkey signed natively as nats.go
 *   does, its dial bounded at 5 s, reconnecting through authorization errors with nats.js's own pacing).
 * - `mark`: takes the disconnect and reconnect counts as the baseline; `exclude` (indexes) are left
 *   out of every status from then on.
 * - `status`: what happened since the mark (FleetShare), times on the shared clock (epochNow).
 * - `close`: closes every connection and exits.
 */
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { connectToBus, isSeed, secretOf, type BusCredential } from "../../src/bus/connect.ts";
import { nkeySigner } from "../../src/bus/nkeySigner.ts";
import { hostDialOptions } from "../../src/host/agent.ts";

/** Milliseconds since the epoch, sub-millisecond, comparable between processes. */
export const epochNow = (): number => performance.timeOrigin + performance.now();

/** One connection of a share: who it is and how it dials. */
export type DialSpec =
  | { side: "mesh"; credentials: Array<{ index: number; credential: BusCredential }>; concurrency: number }
  | { side: "raw"; port: number; pem: string; credentials: Array<{ index: number; credential: BusCredential }>; concurrency: number };

/** What one share saw since the mark (the excluded connections left out). */
export type FleetShare = {
  /** Connections watched. */
  size: number;
  /** Reconnected at least once since the mark. */
  back: number;
  /** Disconnected at least once since the mark. */
  dropped: number;
  /** Neither disconnected nor closed since the mark (a storm waits until every client noticed). */
  unaware: number;
  /** Closed by the client (given up) and not back. */
  closedNotBack: number;
  /** Dial attempts made since the mark (nats.js `reconnecting` events). */
  attempts: number;
  /** The last reconnect's time (epochNow) of each connection back. */
  backAt: number[];
};

export type WorkerRequest = { type: "dial"; spec: DialSpec } | { type: "mark"; exclude: number[] } | { type: "status" } | { type: "close" };
export type WorkerReply = { type: "dialled"; retries: number } | { type: "marked" } | { type: "status"; share: FleetShare } | { type: "closed" } | { type: "failed"; error: string };

type Watched = { index: number; nc: NatsConnection; disconnects: number; reconnects: number; attempts: number; lastReconnectAt: number; closed: boolean };
type Baseline = { disconnects: number; reconnects: number; attempts: number };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function watch(index: number, nc: NatsConnection): Watched {
  const watched: Watched = { index, nc, disconnects: 0, reconnects: 0, attempts: 0, lastReconnectAt: 0, closed: false };
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === "disconnect") watched.disconnects += 1;
      else if (status.type === "reconnecting") watched.attempts += 1;
      else if (status.type === "reconnect") {
        watched.reconnects += 1;
        watched.lastReconnectAt = epochNow();
      }
    }
  })().catch(() => undefined);
  void nc.closed().then(() => { watched.closed = true; });
  return watched;
}

function dialer(spec: DialSpec): (credential: BusCredential, index: number) => Promise<NatsConnection> {
  if (spec.side === "mesh") {
    return (credential, index) => connectToBus(credential, hostDialOptions(`n${index}`, () => secretOf(credential)));
  }
  return (credential) => {
    const secret = secretOf(credential);
    const signer = isSeed(secret) ? nkeySigner(secret) : undefined;
    const auth = signer ? { authenticator: (nonce?: string) => ({ nkey: signer.publicKey, sig: nonce ? signer.sign(nonce) : "" }) } : { user: credential.user, pass: secret };
    return connect({ servers: `127.0.0.1:${spec.port}`, tls: { ca: spec.pem }, ...auth, timeout: 5_000, reconnect: true, maxReconnectAttempts: -1, ignoreAuthErrorAbort: true });
  };
}

const fleet: Watched[] = [];
let baseline = new Map<number, Baseline>();
let excluded = new Set<number>();

async function dialAll(spec: DialSpec): Promise<number> {
  const dial = dialer(spec);
  let retries = 0;
  let next = 0;
  const worker = async () => {
    for (;;) {
      const slot = next;
      next += 1;
      if (slot >= spec.credentials.length) return;
      const { index, credential } = spec.credentials[slot]!;
      for (let attempt = 1; ; attempt += 1) {
        try {
          fleet.push(watch(index, await dial(credential, index)));
          break;
        } catch (error) {
          if (attempt >= 5) throw error;
          retries += 1;
          await sleep(200 * attempt);
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(spec.concurrency, spec.credentials.length) }, worker));
  return retries;
}

function share(): FleetShare {
  const out: FleetShare = { size: 0, back: 0, dropped: 0, unaware: 0, closedNotBack: 0, attempts: 0, backAt: [] };
  for (const w of fleet) {
    if (excluded.has(w.index)) continue;
    const base = baseline.get(w.index) ?? { disconnects: 0, reconnects: 0, attempts: 0 };
    const isBack = w.reconnects > base.reconnects;
    out.size += 1;
    out.attempts += w.attempts - base.attempts;
    if (isBack) {
      out.back += 1;
      out.backAt.push(w.lastReconnectAt);
    }
    if (w.disconnects > base.disconnects) out.dropped += 1;
    if (w.disconnects === base.disconnects && !w.closed) out.unaware += 1;
    if (w.closed && !isBack) out.closedNotBack += 1;
  }
  return out;
}

async function handle(request: WorkerRequest): Promise<WorkerReply> {
  switch (request.type) {
    case "dial":
      return { type: "dialled", retries: await dialAll(request.spec) };
    case "mark":
      baseline = new Map(fleet.map((w) => [w.index, { disconnects: w.disconnects, reconnects: w.reconnects, attempts: w.attempts }]));
      excluded = new Set(request.exclude);
      return { type: "marked" };
    case "status":
      return { type: "status", share: share() };
    case "close":
      await Promise.all(fleet.map((w) => w.nc.close().catch(() => undefined)));
      return { type: "closed" };
  }
}

if (process.send) {
  process.on("message", (request: WorkerRequest) => {
    void handle(request)
      .catch((error: unknown): WorkerReply => ({ type: "failed", error: error instanceof Error ? error.message.split("\n")[0]! : String(error) }))
      .then((reply) => {
        process.send!(reply);
        if (reply.type === "closed") process.disconnect();
      });
  });
}
