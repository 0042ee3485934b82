import type { HostReport } from "../contracts/report.ts";

/**
 * The reports one host agent published in reply to declarations, oldest first, and the ways to
 * wait for them (Host.reports, Host.applied, Host.waitForReport). `notify` wakes the waiters after
 * a report is added or the host stopped (`stopped()` says which).
 */
export type ReportLog = {
  readonly reports: HostReport[];
  notify(): void;
  readonly applied: AsyncIterable<HostReport>;
  waitFor(digest: string, timeoutMs?: number): Promise<HostReport>;
};

/** A report log for `node` (ReportLog). */
export function reportLog(node: string, stopped: () => boolean): ReportLog {
  const reports: HostReport[] = [];
  const waiters = new Set<() => void>();
  const notify = () => { for (const wake of [...waiters]) wake(); };

  const waitFor = (digest: string, timeoutMs = 10_000) =>
    new Promise<HostReport>((resolve, reject) => {
      const check = () => {
        const found = reports.find((r) => r.digest === digest);
        if (found) { done(); resolve(found); return true; }
        if (stopped()) { done(); reject(new Error(`host ${node} stopped before reporting ${digest}`)); return true; }
        return false;
      };
      const timer = setTimeout(() => { done(); reject(new Error(`host ${node} did not report ${digest} within ${timeoutMs} ms`)); }, timeoutMs);
      const done = () => { clearTimeout(timer); waiters.delete(wake); };
      const wake = () => { check(); };
      if (!check()) waiters.add(wake);
    });

  const applied: AsyncIterable<HostReport> = {
    [Symbol.asyncIterator]() {
      let index = 0;
      return {
        async next(): Promise<IteratorResult<HostReport>> {
          for (;;) {
            if (index < reports.length) return { value: reports[index++]!, done: false };
            if (stopped()) return { value: undefined, done: true };
            await new Promise<void>((resolve) => {
              const wake = () => { waiters.delete(wake); resolve(); };
              waiters.add(wake);
            });
          }
        },
      };
    },
  };
  return { reports, notify, applied, waitFor };
}
