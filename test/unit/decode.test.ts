import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { z } from "zod";
import { Commit } from "../../src/events/index.ts";
import { catalogueSubject } from "../../src/names.ts";
import { decodeCommit } from "../../src/records/decode.ts";
import { InvalidEvent } from "../../src/records/errors.ts";
import { generateCommits } from "../support/history.ts";

const encoder = new TextEncoder();
const bytes = (value: unknown) => encoder.encode(JSON.stringify(value));
const subjectOf = (commit: { entity: { kind: string; id: string } }) => catalogueSubject(commit.entity.kind, commit.entity.id);
const AT = "2026-01-01T00:00:00.000Z";

/** The InvalidEvent decodeCommit throws for `value` stored at `sequence` on `subject`. */
function refusal(sequence: number, subject: string, value: unknown): InvalidEvent {
  try {
    decodeCommit(sequence, subject, bytes(value));
  } catch (error) {
    assert.ok(error instanceof InvalidEvent, `an InvalidEvent, not ${String(error)}`);
    return error;
  }
  assert.fail("decodeCommit accepted an invalid commit");
}

describe("decodeCommit: a stored commit read back", () => {
  it("R44: the records' schema compiles whole: zod's compiler leaves no part of Commit to its interpreter", () => {
    // strict: the compiler throws instead of quietly handing a part it cannot model back to the
    // interpreter (a replay would then validate at the old cost, and nothing else would say so).
    assert.doesNotThrow(() => z.compile(Commit, { strict: true }));
  });

  it("R44: every commit of a history decodes to what the Commit schema itself parses, field for field", () => {
    const commits = generateCommits({ seed: 3, events: 3000 });
    const types = new Set(commits.flatMap((c) => c.events.map((e) => e.type)));
    assert.ok(types.size >= 17, "the history holds every event type");
    commits.forEach((commit, i) => {
      const decoded = decodeCommit(i + 1, subjectOf(commit), bytes(commit));
      assert.deepEqual(decoded, Commit.parse(JSON.parse(JSON.stringify(commit))), `commit ${i + 1}`);
    });
  });

  it("R44: a commit stored without a field that has a default reads back with the default, as Commit parses it", () => {
    const commit = {
      commandId: "reg-1", entity: { kind: "module", id: "app" },
      events: [{ type: "ModuleRegistered", actor: "operator-a", commandId: "reg-1", at: AT, manifest: { name: "app", version: "1.0.0" } }],
    };
    const decoded = decodeCommit(7, subjectOf(commit), bytes(commit));
    assert.deepEqual(decoded, Commit.parse(commit));
    const event = decoded.events[0]!;
    assert.ok(event.type === "ModuleRegistered" && Array.isArray(event.manifest.claims), "the manifest's defaults are filled in");
  });

  it("R45: a commit that fails its schema is refused naming its sequence, its event types and the field, as Commit words it", () => {
    const good = generateCommits({ seed: 4, events: 200 });
    const cases: Array<{ name: string; commit: Record<string, unknown>; field: string }> = [];
    const enrolled = good.find((c) => c.events[0]!.type === "NodeEnrolled")!;
    const sent = good.find((c) => c.events[0]!.type === "DeclarationSent")!;
    const withEvent = (commit: typeof good[number], change: (event: Record<string, unknown>) => void) => {
      const copy = JSON.parse(JSON.stringify(commit)) as { events: Array<Record<string, unknown>> } & Record<string, unknown>;
      change(copy.events[0]!);
      return copy;
    };
    cases.push({ name: "a node name out of the alphabet", commit: withEvent(enrolled, (e) => { e.node = "Bad_Name"; }), field: "events.0.node" });
    cases.push({ name: "a missing field", commit: withEvent(enrolled, (e) => { delete e.publicKey; }), field: "events.0.publicKey" });
    cases.push({ name: "a field nobody declared (strict)", commit: withEvent(sent, (e) => { e.extra = 1; }), field: "events.0" });
    cases.push({ name: "a number where a string goes", commit: withEvent(sent, (e) => { e.digest = 12; }), field: "events.0.digest" });
    cases.push({ name: "a negative records sequence", commit: withEvent(sent, (e) => { e.recordsSequence = -1; }), field: "events.0.recordsSequence" });
    cases.push({ name: "a time that is not ISO 8601", commit: withEvent(sent, (e) => { e.at = "yesterday"; }), field: "events.0.at" });
    cases.push({ name: "an event type this release does not know", commit: withEvent(sent, (e) => { e.type = "NodeExploded"; }), field: "events.0.type" });
    cases.push({ name: "no events", commit: { ...JSON.parse(JSON.stringify(sent)), events: [] }, field: "events" });
    for (const { name, commit, field } of cases) {
      const error = refusal(42, subjectOf(commit as { entity: { kind: string; id: string } }), commit);
      assert.equal(error.sequence, 42, name);
      const issues = (error.cause as z.ZodError).issues;
      assert.deepEqual(issues, Commit.safeParse(commit).error!.issues, `${name}: the same issues as the interpreted schema`);
      assert.ok(issues.some((issue) => issue.path.join(".") === field), `${name}: names ${field} (${JSON.stringify(issues.map((i) => i.path.join(".")))})`);
      assert.ok(error.message.includes("sequence 42"), name);
      assert.deepEqual(error.types, (commit.events as Array<{ type: string }>).map((e) => e.type), name);
    }
  });

  it("R45: bytes that are not JSON, and a commit stored on another entity's subject, are refused naming the sequence", () => {
    const commit = generateCommits({ seed: 5, events: 20 })[3]!;
    assert.throws(() => decodeCommit(9, subjectOf(commit), encoder.encode("not json")), (error: unknown) => error instanceof InvalidEvent && error.sequence === 9);
    assert.throws(
      () => decodeCommit(10, catalogueSubject("node", "someone-else"), bytes(commit)),
      (error: unknown) => error instanceof InvalidEvent && error.sequence === 10 && error.message.includes("stored on"),
    );
  });
});
