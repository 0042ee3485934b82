import { headers, type MsgHdrs } from "@nats-io/transport-node";
import type { JetStreamClient, JetStreamManager, PubAck } from "@nats-io/jetstream";
import { USER_LIST_PART_BYTES, userListPartCount, type Declaration, type UserListRef } from "../compose/declaration.ts";
import { openWithMeshKey, sealToNode } from "../crypto/secrets.ts";
import { CONTROL_STREAM, USER_LIST_DIGEST_HEADER, USER_LIST_PART_HEADER, declarationSubject, userListPartSubject, userListPartsFilter } from "../names.ts";
import { partHeaderValue } from "../contracts/userList.ts";
import { retryJetStream } from "../bus/retry.ts";

/** Publishing a round: each declaration sealed to its node, a broker holder's user list in parts first, pipelined. */

/**
 * Publishes in flight before waiting for their acks (pipelining). 256 keeps the bus busy; more only
 * queues on it: on nats-server 2.9.10 replacing a node's latest declaration costs ~2 ms with
 * 10,000 CONTROL consumers, and 2,048 in flight outlived the 5 s publish timeout.
 */
export const PUBLISH_WINDOW = 256;
/**
 * Publishes queued before the publishing loop yields (so nats.js writes them in one go) while the
 * window has room: small enough that the bus starts on the first ones while the next are sealed.
 */
export const PUBLISH_FLUSH = 32;
/** Entries a seal cache keeps before it is cleared. */
export const SEAL_CACHE_LIMIT = 200_000;

/**
 * The declaration as sent to its node: every `sealed` secret (mesh-key form, as composed and
 * digested) opened and sealed again to the node's public key (sealToNode), so only that node opens
 * it. `opened` caches opened secrets across nodes of one push.
 */
export function sealForNode(
  declaration: Declaration,
  publicKey: string,
  meshKey: string,
  opened: Map<string, string>,
  cache?: Map<string, string>,
): Declaration {
  const reseal = (sealed: string): string => {
    const key = `${publicKey}|${sealed}`;
    const known = cache?.get(key);
    if (known !== undefined) return known;
    let secret = opened.get(sealed);
    if (secret === undefined) {
      secret = openWithMeshKey(meshKey, sealed);
      opened.set(sealed, secret);
    }
    const forNode = sealToNode(publicKey, secret);
    if (cache) {
      if (cache.size >= SEAL_CACHE_LIMIT) cache.clear();
      cache.set(key, forNode);
    }
    return forNode;
  };
  return {
    ...declaration,
    modules: declaration.modules.map((m) => ({
      ...m,
      credential: { ...m.credential, sealed: reseal(m.credential.sealed) },
      provisions: m.provisions.map((p) => ({ ...p, sealed: reseal(p.sealed) })),
    })),
    provisions: declaration.provisions.map((p) => ({ ...p, sealed: reseal(p.sealed) })),
  };
}

/**
 * The user list's UTF-8 bytes cut into parts of `partBytes` (default USER_LIST_PART_BYTES), in
 * order; userListPartCount(bytes) of them (an empty text is one empty part). Each part is a view
 * of one buffer: joined, they are the text's bytes exactly.
 */
export function splitUserList(text: string, partBytes: number = USER_LIST_PART_BYTES): Uint8Array[] {
  const bytes = Buffer.from(text, "utf8");
  const count = userListPartCount(bytes.length, partBytes);
  return Array.from({ length: count }, (_, index) => bytes.subarray(index * partBytes, Math.min(bytes.length, (index + 1) * partBytes)));
}

/** The headers of part `index` of `count` of the list whose digest is `digest` (USER_LIST_*_HEADER). */
export function userListPartHeaders(digest: string, index: number, count: number): MsgHdrs {
  const h = headers();
  h.set(USER_LIST_DIGEST_HEADER, digest);
  h.set(USER_LIST_PART_HEADER, partHeaderValue(index, count));
  return h;
}

/** A user list to send with a broker holder's declaration: what the declaration names, and the parts. */
export type UserListParts = { ref: UserListRef; parts: readonly Uint8Array[] };

/**
 * Cuts `text` into the parts `ref` names (splitUserList). Throws when the sizes disagree (the
 * composition and the shell must cut the same list the same way).
 */
export function userListParts(text: string, ref: UserListRef): UserListParts {
  const parts = splitUserList(text);
  const bytes = parts.reduce((sum, p) => sum + p.length, 0);
  if (parts.length !== ref.parts || bytes !== ref.bytes) {
    throw new Error(`the user list is ${bytes} bytes in ${parts.length} parts, its declaration names ${ref.bytes} in ${ref.parts}`);
  }
  return { ref, parts };
}

/** One declaration to send: its payload is made (sealed to the node) just before its publish; a broker holder's list parts go first. */
export type Send = { node: string; digest: string; payload(): string; userList?: UserListParts };

/**
 * The publishing window: `track(publish)` counts a publish in flight until it settles (adding it
 * to `all`) and says when the loop must wait: a promise when the window is full (it resolves when
 * one settles) or every PUBLISH_FLUSH publishes (resolved: just yield), else undefined. The loop
 * yields only then: nats.js writes what is queued when the loop yields, so a yield per publish
 * made one socket write per publish, and sealing the next ones (CPU) could not run while the bus
 * acknowledged the earlier ones.
 */
function publishWindow(all: Array<Promise<void>>): (publish: Promise<void>) => Promise<void> | undefined {
  let inFlight = 0;
  let sinceYield = 0;
  let room: (() => void) | null = null;
  const settled = () => {
    inFlight -= 1;
    if (room && inFlight < PUBLISH_WINDOW) {
      const wake = room;
      room = null;
      wake();
    }
  };
  return (publish) => {
    inFlight += 1;
    all.push(publish.finally(settled));
    if (inFlight >= PUBLISH_WINDOW) return new Promise<void>((resolve) => { room = resolve; });
    if (++sinceYield >= PUBLISH_FLUSH) {
      sinceYield = 0;
      return Promise.resolve();
    }
    return undefined;
  };
}

/**
 * Purges each node's user-list parts older than the first part of its new list (`firstPartSequence`),
 * skipping the nodes in `failures`; best effort: a purge that fails is a line in `purgeErrors`.
 */
async function purgeStaleParts(jsm: JetStreamManager, firstPartSequence: ReadonlyMap<string, number>, failures: ReadonlyMap<string, string>, purgeErrors: string[]): Promise<void> {
  for (const [node, seq] of firstPartSequence) {
    // nats-server 2.9.10 reads a purge `seq` of 0 or 1 as "no bound": it would take the new parts
    // too. A first part at sequence 1 has nothing older to purge anyway.
    if (failures.has(node) || seq <= 1) continue;
    try {
      await retryJetStream(`purging ${node}'s stale user-list parts`, () => jsm.streams.purge(CONTROL_STREAM, { filter: userListPartsFilter(node), seq }));
    } catch (error) {
      purgeErrors.push(`${node}: ${error instanceof Error ? error.message.split("\n")[0]! : String(error)}`);
    }
  }
}

/**
 * Publishes each declaration, pipelined: up to PUBLISH_WINDOW publishes in flight, the next one
 * sealed (CPU) while earlier ones are acknowledged (bus). A broker holder's user-list parts are
 * published before its declaration, on userListPartSubject(node, index) with the list's digest and
 * `<index>/<count>` in headers (one connection keeps them in order, so the host meets every part
 * before the declaration naming them); a node whose part or declaration failed is failed. Then the
 * parts older than the new list's first part are purged from the node's part subjects (a shorter
 * list leaves no stale tail behind; best effort, reported in `purgeErrors`).
 * Returns per node the error, if any; `refusedToSeal` collects the nodes whose secrets could not
 * be sealed (not published). `sent` hears each node without a list whose declaration the bus
 * acknowledged, as it is; `beforeList` is awaited before a user list is published.
 */
export async function publishAll(
  js: JetStreamClient,
  jsm: JetStreamManager,
  sends: readonly Send[],
  refusedToSeal: Map<string, string>,
  options: {
    timings?: Record<string, number> | undefined;
    progress?: ((done: number, total: number) => void) | undefined;
    purgeErrors?: string[];
    sent?: (node: string, digest: string) => void;
    beforeList?: () => Promise<void>;
  } = {},
): Promise<Map<string, string>> {
  const { timings, progress, purgeErrors = [] } = options;
  const failures = new Map<string, string>();
  const all: Array<Promise<void>> = [];
  const firstPartSequence = new Map<string, number>();
  let done = 0;
  let sealMs = 0;
  const fail = (node: string) => (error: unknown) => {
    if (!failures.has(node)) failures.set(node, error instanceof Error ? error.message.split("\n")[0]! : String(error));
  };
  const track = publishWindow(all);
  for (const send of sends) {
    let payload: string;
    const sealStart = performance.now();
    try {
      payload = send.payload();
    } catch (error) {
      refusedToSeal.set(send.node, error instanceof Error ? error.message.split("\n")[0]! : String(error));
      continue;
    } finally {
      sealMs += performance.now() - sealStart;
    }
    if (send.userList) {
      await options.beforeList?.();
      const { ref, parts } = send.userList;
      for (let index = 0; index < parts.length; index += 1) {
        const published = js.publish(userListPartSubject(send.node, index), parts[index]!, { headers: userListPartHeaders(ref.digest, index, parts.length) });
        const wait = track(published.then(
          (ack: PubAck) => { if (index === 0) firstPartSequence.set(send.node, ack.seq); },
          fail(send.node),
        ));
        if (wait) await wait;
      }
    }
    const wait = track(js.publish(declarationSubject(send.node), payload).then(
      (_ack: PubAck) => { if (!send.userList) options.sent?.(send.node, send.digest); },
      fail(send.node),
    ).finally(() => {
      done += 1;
      if (progress && (done % 1000 === 0 || done === sends.length)) progress(done, sends.length);
    }));
    if (wait) await wait;
  }
  await Promise.all(all);
  await purgeStaleParts(jsm, firstPartSequence, failures, purgeErrors);
  if (timings) timings.seal = (timings.seal ?? 0) + sealMs;
  return failures;
}
