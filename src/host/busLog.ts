import { readdirSync, readFileSync, rmSync, watch, type FSWatcher } from "node:fs";
import { basename, dirname, join } from "node:path";

/**
 * R70: the bus's log is bounded. Anyone the bus admits, a principal with no grants included, can
 * make it log (20,000 denied publishes added 4 MB in 1.9 s), and the log shares its disk with the
 * JetStream store. The configuration genesis writes has nats-server rotate its log at
 * BUS_LOG_SIZE_LIMIT (`logfile_size_limit`); nats-server 2.9.10 keeps every rotated file (its
 * `logfile_max_num` came in 2.10), so the agent on the bus's machine (the one that installs its
 * user list) prunes them to BUS_LOG_ROTATED_KEPT at each rotation. The log then takes at most
 * (BUS_LOG_ROTATED_KEPT + 1) × BUS_LOG_SIZE_LIMIT, plus one line per file.
 */

/** Bytes after which the bus rotates its log (nats-server `logfile_size_limit`). */
export const BUS_LOG_SIZE_LIMIT = 10 * 1024 * 1024;
/** Rotated bus logs kept beside the live one: the newest, for an operator reading back an incident. */
export const BUS_LOG_ROTATED_KEPT = 4;

/** The `log_file` a nats-server configuration text names (as the installer writes it, quoted), or null. Pure. */
export function busLogFileOf(configText: string): string | null {
  const found = /^\s*(?:log_file|logfile)\s*[:=]\s*"([^"]+)"\s*$/m.exec(configText);
  return found ? found[1]! : null;
}

/**
 * The rotated files of a log named `base` among `names` (a folder's entries), oldest first:
 * nats-server 2.9.10 renames a full log to `<base>.YYYY.MM.DD.hh.mm.ss.nnnnnnnnn`, so the names
 * sort by age. Pure.
 */
export function rotatedLogs(base: string, names: readonly string[]): string[] {
  const prefix = `${base}.`;
  return names.filter((name) => name.startsWith(prefix) && /^\d{4}(\.\d+){6}$/.test(name.slice(prefix.length))).sort();
}

/**
 * Removes every rotated file of `logFile` but the newest `kept`; returns the paths removed. A file
 * already gone is skipped; throws only when the folder cannot be read.
 */
export function pruneRotatedLogs(logFile: string, kept = BUS_LOG_ROTATED_KEPT): string[] {
  const folder = dirname(logFile);
  const rotated = rotatedLogs(basename(logFile), readdirSync(folder));
  const removed = rotated.slice(0, Math.max(0, rotated.length - kept)).map((name) => join(folder, name));
  for (const path of removed) rmSync(path, { force: true });
  return removed;
}

/** A running pruner of a bus log (watchBusLog). */
export type BusLogWatch = { stop(): void };

/**
 * Prunes the rotated files of `logFile` now and at each change in its folder (a rotation is a
 * rename there), so a flood of log lines never leaves more than `kept` of them. `log` hears a
 * failure once (never a line per rotation: that would move the flood into the agent's own log).
 * Never throws: a folder that cannot be watched is said and left alone.
 */
export function watchBusLog(logFile: string, log: (line: string) => void, kept = BUS_LOG_ROTATED_KEPT): BusLogWatch {
  let said = false;
  const prune = () => {
    try {
      pruneRotatedLogs(logFile, kept);
    } catch (error) {
      if (said) return;
      said = true;
      log(`bus log ${logFile}: its rotated files could not be pruned (R70): ${error instanceof Error ? error.message.split("\n")[0]! : String(error)}`);
    }
  };
  prune();
  let watcher: FSWatcher;
  try {
    watcher = watch(dirname(logFile), { persistent: false }, (_event, name) => {
      if (name === null || name.startsWith(`${basename(logFile)}.`)) prune();
    });
  } catch (error) {
    log(`bus log ${logFile}: its folder cannot be watched, so its rotated files are not pruned (R70): ${error instanceof Error ? error.message.split("\n")[0]! : String(error)}`);
    return { stop: () => undefined };
  }
  watcher.on("error", () => undefined);
  return { stop: () => watcher.close() };
}

/**
 * The bus logs the agent on the bus's machine prunes: the `log_file` each server's configuration
 * names (one per server of a cluster), read from its configuration file. A configuration that
 * cannot be read, or names none (a bus configured before R70), gives none.
 */
export function busLogFiles(configFiles: readonly string[]): string[] {
  return configFiles.flatMap((file) => {
    try {
      const found = busLogFileOf(readFileSync(file, "utf8"));
      return found === null ? [] : [found];
    } catch {
      return [];
    }
  });
}
