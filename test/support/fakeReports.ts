import type { JetStreamManager } from "@nats-io/jetstream";
import { reportSubject } from "../../src/names.ts";
import { NOW } from "./givenWhenThen.ts";

/**
 * A JetStreamManager answering the REPORTS stream from `stored` (the last report by node), for
 * reportsVerb: `getMessage` by last subject and `info`'s subjects, nothing else.
 */
export function fakeReports(stored: Record<string, unknown>): JetStreamManager {
  const nodeOf = new Map(Object.keys(stored).map((node) => [reportSubject(node), node]));
  const streams = {
    getMessage: async (_stream: string, query: { last_by_subj: string }) => {
      const node = nodeOf.get(query.last_by_subj);
      return node === undefined ? null : { json: () => stored[node], time: new Date(NOW) };
    },
    info: async () => ({ state: { subjects: Object.fromEntries([...nodeOf.keys()].map((subject) => [subject, 1])) } }),
  };
  return { streams } as unknown as JetStreamManager;
}
