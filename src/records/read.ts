import type { NatsConnection, Status } from "@nats-io/transport-node";
import { DeliverPolicy, jetstream, jetstreamManager, type Consumer, type ConsumerMessages, type JetStreamClient, type JetStreamManager, type JsMsg } from "@nats-io/jetstream";
import { CATALOGUE_STREAM } from "../names.ts";
import { ReadInterrupted } from "./errors.ts";
import type { ReadOptions } from "./catalogueTypes.ts";

/** The one resuming read of the CATALOGUE stream (R58): every fold and lookup reads through readMessages. */

/** How many commits the reader hands over at a time. */
export const FOLD_BATCH = 1000;
/**
 * The most commit bytes a read asks the bus for at once (R58). One commit can be hundreds of KiB (a
 * push to 10,000 nodes records ~230 KiB); asking by message count let the server queue past its
 * per-client pending limit (64 MiB by default) while the fold ran, drop the reader as a slow
 * consumer, and the read never resumed. Bytes in flight stay under this bound whatever the sizes.
 */
export const READ_BYTES_IN_FLIGHT = 16 * 1024 * 1024;
/**
 * The most messages a read asks the bus for at once, however small they are. The bound in bytes is
 * kept by asking for READ_BYTES_IN_FLIGHT / (the largest message size known) messages: nats.js
 * takes a pull's limit in messages or in bytes, not both, and its byte-limited pulls stall on
 * their expiry between refills (a read of 87,000 small commits took 23 s that way, 0.7 s by count).
 */
const READ_MESSAGES_IN_FLIGHT = 1000;
/** The message size a read assumes before it has seen one, when the caller knows no average. */
const READ_MESSAGE_BYTES_GUESS = 1024;

export type Bus = { nc: NatsConnection; js: JetStreamClient; jsm: JetStreamManager; reader: JetStreamClient };

export async function busOf(nc: NatsConnection): Promise<Bus> {
  return { nc, js: jetstream(nc), jsm: await jetstreamManager(nc, { checkAPI: false }), reader: jetstream(nc, { timeout: READ_CONSUMER_TIMEOUT_MS }) };
}


/**
 * Milliseconds the creation of a read's consumer may take before the attempt ends as unavailable
 * and another is made (R62): on a cluster with a server down, 2.9.10 places the read's one-replica
 * consumer on the dead peer about one time in three and its creation never answers; the next
 * attempt is placed again. A healthy creation takes milliseconds.
 */
export const READ_CONSUMER_TIMEOUT_MS = 2_000;

/** Why one attempt of a read ended before the read's last sequence. */
type Interruption = { reason: "disconnected" | "stalled" | "unavailable" | "ended" | "narrowed"; cause?: unknown };

/** What a read's `take` says of a message: go on, stop (the last was reached), or ask again for fewer at a time. */
type Taken = "more" | "done" | "narrow";

/**
 * Follows the connection's state for one read (R58): whether it is connected now, and a promise
 * that settles at the next disconnect or at the next reconnect. The client reconnects by itself;
 * the read only needs to know when to stop asking and when to ask again.
 */
class ConnectionWatch {
  connected = true;
  #iterator: AsyncIterable<Status> & { stop(): void };
  #waiters: Array<{ on: "disconnect" | "reconnect" | "close"; resolve: () => void }> = [];
  constructor(nc: NatsConnection) {
    const iterator = nc.status() as AsyncIterable<Status> & { stop(): void };
    this.#iterator = iterator;
    void (async () => {
      for await (const status of iterator) {
        if (status.type === "disconnect") this.connected = false;
        if (status.type === "reconnect") this.connected = true;
        if (status.type === "disconnect" || status.type === "reconnect" || status.type === "close") this.#settle(status.type);
      }
    })().catch(() => undefined);
    // A closed connection ends reconnecting for good: wake every waiter.
    void nc.closed().then(() => this.#settle("close", true));
  }
  #settle(type: "disconnect" | "reconnect" | "close", all = false): void {
    const ready = this.#waiters.filter((w) => all || w.on === type || type === "close");
    this.#waiters = this.#waiters.filter((w) => !ready.includes(w));
    for (const w of ready) w.resolve();
  }
  /** Settles at the next event of kind `on` (or when the connection closes). */
  next(on: "disconnect" | "reconnect"): Promise<void> {
    return new Promise((resolve) => this.#waiters.push({ on, resolve }));
  }
  stop(): void {
    this.#iterator.stop();
    this.#settle("close", true);
  }
}

/** Milliseconds a pull request waits on the server; heartbeats come every half of it (R58). */
const READ_EXPIRES_MS = 5_000;
/** Default of ReadOptions.stallLimitMs: how long a read may hand over nothing before it throws. */
export const READ_STALL_LIMIT_MS = 60_000;
/** Pause between attempts that ended without a disconnect (a refused or lost consumer), ms. */
const READ_RETRY_MS = [50, 100, 200, 400, 800, 1000];

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Waits for `event` or `ms`, whichever comes first, and clears the timer either way: a timer left
 * running after a reconnect won would keep a short-lived process (a CLI's read) alive for up to the
 * stall limit.
 */
async function eventOrTimeout(event: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([event, new Promise<void>((resolve) => { timer = setTimeout(resolve, ms); })]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * One attempt of a read: an ordered consumer from `next` (on `filter` when given), asked for at most
 * `messages` at a time, until `take` says the last sequence was reached (null), or that the
 * messages grew too large for that count ("narrowed"), or something else ends the attempt (the
 * Interruption). Messages already received when it ends are still handed to `take`, in order.
 */
async function readAttempt(
  bus: Bus,
  watch: ConnectionWatch,
  next: number,
  messagesAtOnce: number,
  filter: string | undefined,
  take: (m: JsMsg) => Taken,
): Promise<Interruption | null> {
  if (!watch.connected) return { reason: "disconnected" };
  let consumer: Consumer;
  let messages: ConsumerMessages;
  try {
    consumer = await bus.reader.consumers.get(CATALOGUE_STREAM, {
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: next,
      ...(filter === undefined ? {} : { filter_subjects: filter }),
    });
    messages = await consumer.consume({ max_messages: messagesAtOnce, expires: READ_EXPIRES_MS });
  } catch (error) {
    // JetStream not ready yet after a restart, or the connection went while asking.
    return { reason: watch.connected ? "unavailable" : "disconnected", cause: error };
  }
  let ended: Interruption | null = null;
  const end = (interruption: Interruption) => {
    if (ended !== null) return;
    ended = interruption;
    // Stops the iterator after the messages it already holds (they are valid and in order).
    void messages.close().catch(() => undefined);
  };
  void watch.next("disconnect").then(() => end({ reason: "disconnected" }));
  void (async () => {
    for await (const status of messages.status()) {
      // The library recreates an ordered consumer on a gap by itself; these are the signs that it
      // will not get going again on its own (the server lost the consumer, or nothing arrives).
      if (status.type === "heartbeats_missed" || status.type === "consumer_deleted" || status.type === "consumer_not_found" || status.type === "stream_not_found") {
        end({ reason: "stalled", cause: new Error(`the consumer reported ${status.type}`) });
      }
    }
  })().catch(() => undefined);
  let done = false;
  try {
    for await (const m of messages) {
      const taken = take(m);
      if (taken === "done") { done = true; break; }
      if (taken === "narrow") { ended ??= { reason: "narrowed" }; break; }
    }
  } catch (error) {
    if (ended === null) ended = { reason: watch.connected ? "stalled" : "disconnected", cause: error };
  } finally {
    await messages.close().catch(() => undefined);
    // An ordered consumer left behind would live on the server until its inactivity threshold.
    void consumer.delete().catch(() => undefined);
  }
  return done ? null : (ended ?? { reason: "ended" });
}

/**
 * What readMessages needs besides its range: a subject filter, ReadOptions' limits, and the average
 * size of the messages to read when the caller knows it (stream info: bytes / messages).
 */
type RawReadOptions = Pick<ReadOptions, "bytesInFlight" | "stallLimitMs"> & { filter?: string; averageBytes?: number };

/**
 * Every read of the CATALOGUE stream goes through here (R58): the messages from `from` to `last`
 * (on `options.filter` only, when given), in order, each once, handed to `take` until it returns
 * true or `last` was handed over; at most `bytesInFlight` (default READ_BYTES_IN_FLIGHT) asked for
 * at a time, as a count of messages: that many bytes over the largest message size known (the
 * stream's average to begin with, `options.averageBytes`); a larger message starts a new attempt
 * asking for fewer. A lost connection (a slow-consumer drop, a bus restart) or a consumer that stops
 * delivering ends the current attempt; the read starts again from the sequence after the last one
 * handed over, on a fresh consumer, as soon as the client is reconnected. After the same server
 * dropped the reader, the bytes in flight are halved (never under one max payload) so that the next
 * attempt fits the server's per-client pending limit. Returns the last sequence handed over (from -
 * 1 when none). Throws ReadInterrupted when nothing was handed over for `stallLimitMs` (default
 * READ_STALL_LIMIT_MS) or the connection closed.
 */
export async function readMessages(bus: Bus, from: number, last: number, options: RawReadOptions, take: (m: JsMsg) => boolean): Promise<number> {
  let read = from - 1;
  if (from > last) return read;
  const stallLimitMs = options.stallLimitMs ?? READ_STALL_LIMIT_MS;
  // One message can be as large as the server's max payload (plus headers): asking for less
  // would never deliver it.
  const floor = (bus.nc.info?.max_payload ?? 1024 * 1024) + 64 * 1024;
  let bytes = Math.max(floor, options.bytesInFlight ?? READ_BYTES_IN_FLIGHT);
  // The largest message size known so far: asking for bytes / largest messages at a time keeps the
  // bytes in flight under `bytes`. A larger message ends the attempt so the next one asks for fewer.
  // Four times the average: a history of small commits still reads 1,000 at a time, and one
  // whose pushes are large starts narrow, before it has met them.
  let largest = Math.max(READ_MESSAGE_BYTES_GUESS, 4 * (options.averageBytes ?? 0));
  const atOnce = () => Math.max(1, Math.min(READ_MESSAGES_IN_FLIGHT, Math.floor(bytes / largest)));
  let asked = atOnce();
  let finished = false;
  const handOver = (m: JsMsg): Taken => {
    if (m.seq <= read) return "more"; // already handed over by an earlier attempt
    if (m.seq > last) { finished = true; return "done"; }
    if (m.data.length > largest) {
      largest = m.data.length;
      // The consumer still owes up to `asked` messages that may be as large: end it at once,
      // before this one is folded, and ask again from this one for fewer.
      if (atOnce() < asked) return "narrow";
    }
    read = m.seq;
    if (take(m) || m.seq >= last) { finished = true; return "done"; }
    return "more";
  };
  const watch = new ConnectionWatch(bus.nc);
  let idleSince = Date.now();
  let retries = 0;
  try {
    while (!finished) {
      const server = bus.nc.info?.server_id;
      const before = read;
      asked = atOnce();
      const interruption = await readAttempt(bus, watch, read + 1, asked, options.filter, handOver);
      if (interruption === null) break;
      if (read > before) { idleSince = Date.now(); retries = 0; }
      if (interruption.reason === "narrowed") continue;
      if (bus.nc.isClosed()) throw new ReadInterrupted(read + 1, "the connection to the bus closed", { cause: interruption.cause });
      const left = stallLimitMs - (Date.now() - idleSince);
      if (left <= 0) {
        throw new ReadInterrupted(read + 1, `nothing was handed over for ${stallLimitMs} ms (last: ${interruption.reason})`, { cause: interruption.cause });
      }
      if (!watch.connected) {
        // Wait for the client to reconnect, never past the stall limit.
        await eventOrTimeout(watch.next("reconnect"), left);
        // Dropped by the same server (a restart changes the server id): it found the reader too
        // slow for its pending limit. Ask for less at a time from now on.
        if (watch.connected && bus.nc.info?.server_id === server) bytes = Math.max(floor, Math.floor(bytes / 2));
        continue;
      }
      if (interruption.reason === "disconnected") continue;
      await sleep(Math.min(left, READ_RETRY_MS[Math.min(retries, READ_RETRY_MS.length - 1)]!));
      retries += 1;
    }
  } finally {
    watch.stop();
  }
  return read;
}
