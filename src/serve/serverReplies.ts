/**
 * A reply on the wire (R33, R50): stamped with the verbs' contract version, encoded, and for a
 * long verb, sent until its asker's inbox hears it. The command server's I/O, apart from deciding.
 */
import { errors, type NatsConnection } from "@nats-io/transport-node";
import { VERBS_VERSION } from "../contracts/verbs.ts";
import type { Reply } from "../commands/envelope.ts";

/** How long a long verb's reply is sent again while nothing subscribes its subject (deliverReply). */
export const DELIVERY_BOUND_MS = 60_000;

/** How long an attempt waits for the bus to say no one subscribes: no such answer means heard. */
const HEARD_AFTER_MS = 1_000;

/**
 * A reply's bytes as on the wire (stamped); a reply that cannot be encoded becomes `internal`,
 * with the reason in the log (`logError`).
 */
export function encodeReply(reply: Reply, logError: (line: string) => void): Uint8Array {
  try {
    return new TextEncoder().encode(JSON.stringify(stamped(reply)));
  } catch (error) {
    logError(`the reply could not be encoded: ${error instanceof Error ? error.message : String(error)}`);
    return new TextEncoder().encode(JSON.stringify(stamped({ ok: false, error: { code: "internal", message: "the reply could not be sent: see the controller's log" } })));
  }
}

/**
 * Sends a long verb's reply (`data`) to `subject`, the asker's own reply subject (R33), until
 * something subscribed to it hears it: the reply goes out as a request, which the bus answers at
 * once with "no responders" when nothing subscribes the subject; then it is sent again after a
 * pause (0.1 s doubling to 5 s), within DELIVERY_BOUND_MS. Any other outcome (no answer within
 * HEARD_AFTER_MS: the asker's client took it, and answers nothing) counts as heard.
 *
 * Why: a long verb can outlast its asker's connection. A push whose user list rotates away the
 * asker's own key (R50) ends that connection at the reload; the asker's client dials again with its
 * new key and subscribes its inbox again, and a reply published in between went nowhere: the
 * asker waited for its whole timeout on a push that had succeeded. Returns `heard`, `unheard`
 * (the bound passed) or `stopped` (`signal` aborted: the server stops). Never throws.
 */
export async function deliverReply(nc: NatsConnection, subject: string, data: Uint8Array, signal: AbortSignal): Promise<"heard" | "unheard" | "stopped"> {
  const deadline = Date.now() + DELIVERY_BOUND_MS;
  for (let pauseMs = 100; ; pauseMs = Math.min(pauseMs * 2, 5_000)) {
    try {
      await nc.request(subject, data, { timeout: HEARD_AFTER_MS });
      return "heard";
    } catch (error) {
      if (nc.isClosed()) return "stopped";
      const nobody = error instanceof errors.NoRespondersError || (error instanceof errors.RequestError && error.isNoResponders());
      if (!nobody) return "heard";
    }
    if (signal.aborted) return "stopped";
    if (Date.now() + pauseMs > deadline) return "unheard";
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, pauseMs);
      function done() { clearTimeout(timer); signal.removeEventListener("abort", done); resolve(); }
      signal.addEventListener("abort", done, { once: true });
    });
    if (signal.aborted) return "stopped";
  }
}

/**
 * A reply as it goes on the wire: `ok` first, then `v` (the version of the verbs' contract this
 * controller speaks, src/contracts), then the rest. Every reply the server sends is stamped here.
 */
export function stamped(reply: Reply): Reply {
  const { ok, ...rest } = reply;
  return { ok, v: VERBS_VERSION, ...rest } as Reply;
}

