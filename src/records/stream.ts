import { nanos } from "@nats-io/transport-node";
import { JetStreamApiCodes, JetStreamApiError, RetentionPolicy, StorageType, type JetStreamManager, type StreamConfig, type StreamInfo } from "@nats-io/jetstream";
import { CATALOGUE_STREAM, CATALOGUE_SUBJECTS } from "../names.ts";
import { RecordsUnsafe } from "./errors.ts";
import type { CatalogueOptions } from "./catalogueTypes.ts";

/** The CATALOGUE stream itself: created or asserted safe to serve on (R42, R47). */

/**
 * Creates the CATALOGUE stream or asserts the one there: file storage, limits retention, no limit
 * that erases commits, deny_delete and deny_purge (R42). Never changes the configuration of a
 * stream that exists: no mesh credential may (R47, CATALOGUE_ERASE_SUBJECTS), and a limit that
 * erased commits must not be lifted silently, because what it erased is already gone and the
 * operator must know. Throws RecordsUnsafe (R47) naming the setting when the stream there is not
 * safe to serve on (recordsUnsafe).
 */
export async function ensureCatalogueStream(jsm: JetStreamManager, options: CatalogueOptions = {}): Promise<void> {
  const config: Partial<StreamConfig> & { name: string } = {
    name: CATALOGUE_STREAM,
    subjects: [CATALOGUE_SUBJECTS],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    max_age: 0,
    max_msgs: -1,
    max_bytes: -1,
    deny_delete: true,
    deny_purge: true,
    num_replicas: options.replicas ?? 1,
    ...(options.duplicateWindowMs === undefined ? {} : { duplicate_window: nanos(options.duplicateWindowMs) }),
  };
  let existing: StreamInfo;
  try {
    existing = await jsm.streams.info(CATALOGUE_STREAM);
  } catch (error) {
    if (!(error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound)) throw error;
    await jsm.streams.add(config);
    return;
  }
  assertRecordsSafe(existing);
}

/**
 * R47 R42: why CATALOGUE, as its stream info `info` shows it, is not safe to serve on, or null
 * when it is: a limit that erases commits (max_msgs, max_bytes, max_age, max_msgs_per_subject), a
 * first sequence other than 1 or deleted messages (commits were erased), a missing deny_delete or
 * deny_purge (R42), or subjects that no longer capture the records' (appends would go nowhere).
 * The fix names what to set and how: nobody in the mesh may change CATALOGUE's configuration, the
 * controller included, so it is done with a bus user outside the mesh's list. Pure.
 */
export function recordsUnsafe(info: Pick<StreamInfo, "config" | "state">): RecordsUnsafe | null {
  const how = `\`nats stream edit ${CATALOGUE_STREAM}\` as a bus user outside the mesh's list (no mesh credential may change it, R47)`;
  const fix = `restore the setting (${how}) or the records from a backup, then run \`mesh replay\``;
  const limited = (value: number | undefined) => value !== undefined && value > 0;
  const { config, state } = info;
  if (limited(config.max_msgs)) return new RecordsUnsafe("max_msgs", `is ${config.max_msgs}: every commit past it erases the oldest`, `set it to -1: ${fix}`);
  if (limited(config.max_bytes)) return new RecordsUnsafe("max_bytes", `is ${config.max_bytes}: commits past it erase the oldest`, `set it to -1: ${fix}`);
  if (limited(config.max_age)) return new RecordsUnsafe("max_age", `is ${config.max_age} ns: older commits are erased`, `set it to 0: ${fix}`);
  if (limited(config.max_msgs_per_subject)) {
    return new RecordsUnsafe("max_msgs_per_subject", `is ${config.max_msgs_per_subject}: an entity's older commits are erased`, `set it to -1: ${fix}`);
  }
  if (state.last_seq > 0 && state.first_seq !== 1) {
    return new RecordsUnsafe("first_seq", `is ${state.first_seq}: commits 1..${state.first_seq - 1} were erased`, `restore the records from a backup (the erased commits are gone), then run \`mesh replay\``);
  }
  if ((state.num_deleted ?? 0) > 0) return new RecordsUnsafe("num_deleted", `is ${state.num_deleted}: commits were deleted`, `restore the records from a backup, then run \`mesh replay\``);
  if (config.deny_delete !== true) return new RecordsUnsafe("deny_delete", "is off: the records' messages can be deleted (R42)", `set it on: ${how}`);
  if (config.deny_purge !== true) return new RecordsUnsafe("deny_purge", "is off: the records can be purged (R42)", `set it on: ${how}`);
  if (config.subjects !== undefined && !config.subjects.includes(CATALOGUE_SUBJECTS)) {
    return new RecordsUnsafe("subjects", `do not include ${CATALOGUE_SUBJECTS}: commits cannot be appended`, `add it: ${how}`);
  }
  return null;
}

/** R47: throws recordsUnsafe(info) when there is one. Pure: a stream info in, nothing out. */
export function assertRecordsSafe(info: Pick<StreamInfo, "config" | "state">): void {
  const unsafe = recordsUnsafe(info);
  if (unsafe) throw unsafe;
}

