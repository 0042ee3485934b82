import type { State } from "../projections/index.ts";
import { moduleNames, moduleOf, nodeNames, resolveSeat, seatNames, seatOf } from "../projections/index.ts";
import {
  CATALOGUE_STREAM, CATALOGUE_SUBJECTS, CONTROL_STREAM, CONTROL_SUBJECTS, EVENTS_STREAM, EVENTS_SUBJECTS,
  declarationConsumer, declarationFilter, eventSubject, followConsumer, workConsumer, workStream, workStreamSubjects,
} from "../names.ts";
import type { ComposeConfig } from "./types.ts";

/**
 * A stream as the mesh owns it: only the fields the mesh sets, in nats-server's own snake_case
 * (the server fills in the rest; the shell compares only these, so a second raise changes nothing).
 */
export type StreamSpec = {
  name: string;
  subjects: string[];
  retention: "limits" | "workqueue";
  storage: "file";
  num_replicas: number;
  deny_delete: boolean;
  deny_purge: boolean;
  /** CONTROL keeps the latest message per subject: each node's declaration and each part of its user list. */
  max_msgs_per_subject?: number;
};

/**
 * A durable pull consumer as the mesh owns it: one `filter_subject` (server 2.9: no
 * `filter_subjects`, no `metadata`), explicit acks. `max_deliver: -1` on CONTROL consumers: they
 * never dead-letter (R22).
 */
export type ConsumerSpec = {
  stream: string;
  config: {
    durable_name: string;
    filter_subject?: string;
    ack_policy: "explicit";
    deliver_policy: "all" | "new";
    max_deliver?: number;
  };
};

/** Every stream and consumer the records imply; streams first (R22). */
export type Topology = { streams: StreamSpec[]; consumers: ConsumerSpec[] };

/**
 * The JetStream objects the records imply (R5, R16, R21, R22), for bootstrap and push to raise:
 * - CATALOGUE (limits, deny delete and purge, R42);
 * - CONTROL (latest per subject) and one durable pull consumer per enrolled node, filtered on its
 *   own subjects alone (`declarationFilter(node)`: its declaration and its user-list parts), never
 *   dead-lettering (R22). A node consumer raised by an earlier build with the exact filter of its
 *   old single declaration subject is refused by raiseTopology, not rewritten (see raise.ts): delete it
 *   to have it raised again;
 * - one work-queue stream per seat that accepts work, whether or not anyone holds it, with its one
 *   consumer shared by every holder (R16, R20; seat names after aliases, R27);
 * - EVENTS and one consumer per follows entry of every registered module (R4, R18), delivering
 *   from when the consumer is first raised (`new`): a follower does not replay the history.
 * Streams are listed before consumers; each list is sorted by name. Deterministic.
 */
export function composeTopology(state: State, config: ComposeConfig): Topology {
  const replicas = config.replicas ?? 1;
  const stream = (name: string, subjects: string, retention: StreamSpec["retention"], sealed: boolean): StreamSpec => ({
    name, subjects: [subjects], retention, storage: "file", num_replicas: replicas, deny_delete: sealed, deny_purge: sealed,
  });
  const workSeats = new Set<string>();
  for (const name of seatNames(state.modules)) {
    const seat = resolveSeat(state.modules, name);
    if ((seatOf(state.modules, seat)?.accepts.length ?? 0) > 0) workSeats.add(seat);
  }
  const seats = [...workSeats].sort();
  const streams: StreamSpec[] = [
    stream(CATALOGUE_STREAM, CATALOGUE_SUBJECTS, "limits", true),
    { ...stream(CONTROL_STREAM, CONTROL_SUBJECTS, "limits", false), max_msgs_per_subject: 1 },
    stream(EVENTS_STREAM, EVENTS_SUBJECTS, "limits", false),
    ...seats.map((seat) => stream(workStream(seat), workStreamSubjects(seat), "workqueue", false)),
  ];
  streams.sort((a, b) => compare(a.name, b.name));

  const consumers: ConsumerSpec[] = [];
  for (const node of nodeNames(state.nodes)) {
    consumers.push({
      stream: CONTROL_STREAM,
      config: { durable_name: declarationConsumer(node), filter_subject: declarationFilter(node), ack_policy: "explicit", deliver_policy: "all", max_deliver: -1 },
    });
  }
  for (const seat of seats) {
    consumers.push({ stream: workStream(seat), config: { durable_name: workConsumer(seat), ack_policy: "explicit", deliver_policy: "all" } });
  }
  const follows = new Map<string, ConsumerSpec>();
  for (const module of moduleNames(state.modules)) {
    for (const follow of moduleOf(state.modules, module)!.manifest.follows) {
      const seat = resolveSeat(state.modules, follow.seat);
      const durable = followConsumer(module, seat, follow.event);
      const earlier = follows.get(durable);
      // Never keep one filter silently: one durable name is one (module, seat, event) (R52).
      if (earlier && earlier.config.filter_subject !== eventSubject(seat, follow.event)) {
        throw new Error(`composeTopology: consumer ${durable} would filter both ${earlier.config.filter_subject} and ${eventSubject(seat, follow.event)} (R52)`);
      }
      follows.set(durable, {
        stream: EVENTS_STREAM,
        config: { durable_name: durable, filter_subject: eventSubject(seat, follow.event), ack_policy: "explicit", deliver_policy: "new" },
      });
    }
  }
  consumers.push(...[...follows.keys()].sort().map((k) => follows.get(k)!));
  return { streams, consumers };
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
