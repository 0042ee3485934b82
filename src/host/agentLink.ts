import type { NatsConnection } from "@nats-io/transport-node";

/**
 * What the host agent's parts share, one per startHost (agent.ts): the link to the bus as it is
 * now. Each part keeps its own state; this is the little they all read, so it lives in one place.
 */
export type AgentLink = {
  /** Set once, by Host.stop(). */
  stopped: boolean;
  /** The connection in hand, and how to stop consuming declarations on it. */
  current: { nc: NatsConnection; stop: () => void } | undefined;
  /** Whether the declaration consumer is bound on `current` (a report goes now, else at the next bind). */
  bound: boolean;
  /** True while a declaration is being handled (a re-check waits for the next turn). */
  busy: boolean;
  /** The bus certificate as PEM, pinned at the last connect: written beside each module (R57). */
  certificatePem: string | undefined;
  /** The refusal that ended the last connection (a reconnect the bus refused), for the loop's backoff. */
  refusedWith: unknown;
  /** Ends the connection loop's backoff pause at once (stop). */
  wake: (() => void) | undefined;
};

/** A link before the first connection: not stopped, not bound, nothing in hand. */
export function newLink(): AgentLink {
  return { stopped: false, current: undefined, bound: false, busy: false, certificatePem: undefined, refusedWith: undefined, wake: undefined };
}

/** Waits `ms`, or until `link.wake()` (the agent stopped). */
export function pause(link: AgentLink, ms: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(() => { link.wake = undefined; resolve(); }, ms);
    link.wake = () => { clearTimeout(timer); link.wake = undefined; resolve(); };
  });
}

/** Whether a report can go on the bus now: a connection in hand, its consumer bound, the agent running. */
export function canReport(link: AgentLink): link is AgentLink & { current: { nc: NatsConnection } } {
  return link.current !== undefined && link.bound && !link.stopped;
}
