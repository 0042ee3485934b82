import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { StreamInfo } from "@nats-io/jetstream";
import { assertRecordsSafe, recordsUnsafe, RecordsUnsafe } from "../../src/records/catalogue.ts";
import { CATALOGUE_SUBJECTS } from "../../src/names.ts";

type Info = Pick<StreamInfo, "config" | "state">;
const safe = {
  config: { max_msgs: -1, max_bytes: -1, max_age: 0, max_msgs_per_subject: -1, deny_delete: true, deny_purge: true, subjects: [CATALOGUE_SUBJECTS] },
  state: { first_seq: 1, last_seq: 40, num_deleted: 0 },
};
function info(config: Record<string, unknown>, state: Record<string, number> = {}): Info {
  return { config: { ...safe.config, ...config }, state: { ...safe.state, ...state } } as unknown as Info;
}
function settingOf(fn: () => void): string | null {
  try { fn(); return null; } catch (error) {
    assert.ok(error instanceof RecordsUnsafe, String(error));
    return error.setting;
  }
}

describe("the records' guards (R47)", () => {
  it("R47: serves on unlimited records from sequence 1, and on an empty stream", () => {
    assert.equal(settingOf(() => assertRecordsSafe(info({}))), null);
    assert.equal(settingOf(() => assertRecordsSafe(info({}, { first_seq: 0, last_seq: 0 }))), null);
  });

  it("R47: refuses every limit that would erase commits, naming the setting", () => {
    assert.equal(settingOf(() => assertRecordsSafe(info({ max_msgs: 5 }))), "max_msgs");
    assert.equal(settingOf(() => assertRecordsSafe(info({ max_bytes: 1024 }))), "max_bytes");
    assert.equal(settingOf(() => assertRecordsSafe(info({ max_age: 1e9 }))), "max_age");
    assert.equal(settingOf(() => assertRecordsSafe(info({ max_msgs_per_subject: 1 }))), "max_msgs_per_subject");
  });

  it("R47: refuses records whose first sequence is not 1 or that lost messages", () => {
    assert.equal(settingOf(() => assertRecordsSafe(info({}, { first_seq: 36 }))), "first_seq");
    assert.equal(settingOf(() => assertRecordsSafe(info({}, { num_deleted: 2 }))), "num_deleted");
  });

  it("R42 R47: refuses records without their deny guards or whose subjects lost the records' (the controller may not change them: it names them)", () => {
    assert.equal(settingOf(() => assertRecordsSafe(info({ deny_delete: false }))), "deny_delete");
    assert.equal(settingOf(() => assertRecordsSafe(info({ deny_purge: undefined }))), "deny_purge");
    assert.equal(settingOf(() => assertRecordsSafe(info({ subjects: ["elsewhere.>"] }))), "subjects");
  });

  it("R47: recordsUnsafe answers the same without throwing, and its fix says no mesh credential may change the records", () => {
    assert.equal(recordsUnsafe(info({})), null);
    const unsafe = recordsUnsafe(info({ max_msgs: 3 }, { first_seq: 53, last_seq: 55 }));
    assert.equal(unsafe?.setting, "max_msgs");
    assert.match(unsafe?.message ?? "", /outside the mesh's list/);
  });
});
