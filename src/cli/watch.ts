/**
 * `--watch` (`-w`, issue 29): a list or the status drawn again each time the mesh changes, fed by
 * the bus, not by polling: every commit appended to the records (CATALOGUE_SUBJECTS) and every
 * report a node publishes (REPORT_SUBJECTS) is heard as it happens (the operator's grants,
 * src/compose/permissions.ts), and a burst of them is drawn once (debounced). Ctrl-C ends it, exit
 * the last drawing's code.
 */
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { CATALOGUE_SUBJECTS, REPORT_SUBJECTS } from "../names.ts";
import { isData } from "./output.ts";
import { UsageError, type CliContext } from "./context.ts";

/** The option that turns a list or `mesh status` into a watch. */
export const WATCH_OPTION: { flags: string; description: string } = {
  flags: "-w, --watch",
  description: "keep watching: draw it again each time the records or a node's report change (heard on the bus, not polled); Ctrl-C ends it",
};

/** Milliseconds a burst of changes is gathered before one drawing. */
export const WATCH_DEBOUNCE_MS = 100;

/** What the watch hears: the records as they are appended, and the nodes' reports. */
export const WATCHED_SUBJECTS: readonly string[] = [CATALOGUE_SUBJECTS, REPORT_SUBJECTS];

/** ANSI: clear the screen and go home, as `watch` does before each drawing on a terminal. */
const CLEAR_SCREEN = "\x1b[2J\x1b[H";

/**
 * What goes before a drawing: on a terminal, readable output clears the screen; in a pipe or a
 * file, drawings after the first are parted by a blank line; data formats (a stream of objects)
 * get nothing. Pure.
 */
export function framePrefix(first: boolean, options: { tty: boolean; data: boolean }): string {
  if (options.data) return "";
  if (options.tty) return CLEAR_SCREEN;
  return first ? "" : "\n";
}

/**
 * Draws with `draw` (returns its exit code) now and again after each change heard on `nc`
 * (WATCHED_SUBJECTS), at most once per WATCH_DEBOUNCE_MS and never two at once, until Ctrl-C
 * (`ctx.io.onInterrupt`) or the connection closes. Returns the last drawing's exit code. Throws
 * UsageError when the bus refuses the subscription (a mesh whose operators are not granted it yet:
 * its next push grants it), and what `draw` throws.
 */
export async function watchChanges(ctx: Pick<CliContext, "io" | "globals">, nc: NatsConnection, draw: () => Promise<number>, debounceMs = WATCH_DEBOUNCE_MS): Promise<number> {
  const tty = ctx.io.stdout.isTTY === true;
  const data = isData(ctx.globals.output ?? "text");
  let first = true;
  let code = 0;
  const once = async (): Promise<void> => {
    ctx.io.stdout.write(framePrefix(first, { tty, data }));
    first = false;
    code = await draw();
  };
  await once();

  return await new Promise<number>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    let drawing = false;
    let again = false;
    const subscriptions: Subscription[] = [];
    const end = (error?: unknown): void => {
      if (timer !== undefined) clearTimeout(timer);
      for (const s of subscriptions) s.unsubscribe();
      removeInterrupt();
      if (error === undefined) resolve(code);
      else reject(error);
    };
    const run = (): void => {
      timer = undefined;
      if (drawing) { again = true; return; }
      drawing = true;
      once().then(() => {
        drawing = false;
        if (again) { again = false; schedule(); }
      }, end);
    };
    const schedule = (): void => { timer ??= setTimeout(run, debounceMs); };
    const removeInterrupt = ctx.io.onInterrupt?.(() => end()) ?? (() => undefined);
    for (const subject of WATCHED_SUBJECTS) {
      subscriptions.push(nc.subscribe(subject, {
        callback: (error) => {
          if (error) end(new UsageError(`--watch: the bus refused to let this operator hear ${subject} (${error.message.split("\n")[0]}): the mesh's next push grants it (mesh push)`));
          else schedule();
        },
      }));
    }
    void nc.closed().then(() => end());
  });
}
