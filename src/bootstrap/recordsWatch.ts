/**
 * R47 while the controller serves: nobody in the mesh may change CATALOGUE's configuration (its
 * API is denied to every mesh credential, CATALOGUE_ERASE_SUBJECTS), but a bus user outside the
 * mesh's list can. The server announces every change of a stream's configuration
 * (streamUpdatedAdvisory); on each one the controller reads the stream again
 * (Catalogue.checkSafety), so a limit that erases commits stops its appends before the next one,
 * not at its next start. A catch-up reads the same way (every query, every push), and so does a
 * reconnect here (an advisory sent while the connection was away is lost).
 */
import type { Msg, NatsConnection, Subscription } from "@nats-io/transport-node";
import { CATALOGUE_STREAM, streamUpdatedAdvisory } from "../names.ts";
import type { Catalogue } from "../records/catalogue.ts";
import type { ControllerLog } from "./log.ts";
import { boundedText, dropsOf, errorLine, total } from "../bus/total.ts";

/**
 * Reads the records' safety again and says, in one log line, when it changed: unsafe (the
 * setting, the fix, and that only `mesh replay` is served meanwhile) or safe again. Never throws:
 * a failed read is logged, and the next catch-up reads again.
 */
export async function recheckRecords(catalogue: Catalogue, log: ControllerLog): Promise<void> {
  const before = catalogue.unsafe;
  try {
    const unsafe = await catalogue.checkSafety();
    if (unsafe !== null && unsafe.message !== before?.message) log.error(`${unsafe.message}; serving \`mesh replay\` only until then`);
    else if (unsafe === null && before !== null) log.info(`the records (stream ${CATALOGUE_STREAM}) are safe to serve on again (R47)`);
  } catch (error) {
    log.error(`reading the records' configuration failed: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`);
  }
}

/**
 * Hears CATALOGUE's configuration changes until `stop()` and rechecks the records at each
 * (recheckRecords), and at `recheck()` (the caller's reconnects).
 */
export function watchRecords(nc: NatsConnection, catalogue: Catalogue, log: ControllerLog): { recheck(): Promise<void>; stop(): void } {
  const advisory = streamUpdatedAdvisory(CATALOGUE_STREAM);
  const drop = dropsOf(log);
  // R65: only the server's advisory rechecks; a message a principal put on this subject (a pulled
  // JetStream message keeps its stored subject) is one bounded line, and costs no read.
  const hear = total(async (m: Msg) => {
    if (m.subject !== advisory) {
      drop("records-advisory-subject", `a message on ${boundedText(m.subject)} reached the records' advisory watch: dropped, not ${advisory} (R65)`);
      return;
    }
    await recheckRecords(catalogue, log);
  }, (error, m) => { drop("records-advisory-failed", `a message on ${boundedText(m.subject)}: dropped, ${errorLine(error)} (R65)`); });
  const subscription: Subscription = nc.subscribe(advisory, {
    callback: (error, m) => {
      if (error) log.error(`the records' configuration advisories stopped: ${errorLine(error)}`);
      else void hear(m);
    },
  });
  return {
    recheck: () => recheckRecords(catalogue, log),
    stop: () => subscription.unsubscribe(),
  };
}
