/**
 * A stored commit read back (DESIGN.md section 4): the bytes of one CATALOGUE message parsed and
 * validated by the Commit schema (R44, R45). Pure: no bus, no clock; the records adapter calls it
 * for every message it reads.
 */
import { z } from "zod";
import { Commit } from "../events/index.ts";
import { catalogueSubject } from "../names.ts";
import { InvalidEvent } from "./errors.ts";

/** The event types a stored message names, as far as it can be read (for InvalidEvent, R45). */
function typesNamed(raw: unknown): string[] {
  const events = (raw as { events?: unknown } | null)?.events;
  if (!Array.isArray(events)) return [];
  return events.map((e) => (e !== null && typeof e === "object" && typeof (e as { type?: unknown }).type === "string" ? (e as { type: string }).type : "?"));
}

/**
 * The Commit schema compiled ahead of time by zod (`z.compile`): generated code instead of zod's
 * interpreter, the same answers (a unit test holds them equal), about a third of the cost a commit.
 * A commit the compiled code rejects is parsed again by Commit itself, so a failure reads exactly
 * as Commit's: the field and the problem. A replay validates every commit (R44): zod was the larger
 * part of what it cost over a raw read.
 */
const compiledCommit = z.compile(Commit);

const decoder = new TextDecoder();

/**
 * Parses and validates the commit stored at stream sequence `sequence` on `subject` (UTF-8 JSON
 * bytes). Returns it as the Commit schema parses it (defaults filled in). Throws InvalidEvent
 * naming `sequence` and the event types the message names when it is not JSON, does not pass the
 * schema (the cause is the zod error: its issues name the fields), or is about another entity than
 * its subject says.
 */
export function decodeCommit(sequence: number, subject: string, data: Uint8Array): Commit {
  let raw: unknown;
  try {
    raw = JSON.parse(decoder.decode(data));
  } catch (error) {
    throw new InvalidEvent(sequence, { cause: error });
  }
  const parsed = compiledCommit.safeParse(raw);
  if (!parsed.success) throw new InvalidEvent(sequence, { cause: parsed.error, types: typesNamed(raw) });
  const commit = parsed.data;
  if (subject !== catalogueSubject(commit.entity.kind, commit.entity.id)) {
    throw new InvalidEvent(sequence, { cause: new Error(`commit about ${commit.entity.kind}/${commit.entity.id} stored on ${subject}`), types: typesNamed(raw) });
  }
  return commit;
}

/**
 * `value` parsed by the compiled Commit schema: the same answers as `Commit.safeParse` (defaults
 * filled in; on failure the zod error naming the fields), a third of its cost. For a commit about to
 * be appended, whose every event is validated when written (section 4).
 */
export function parseCommit(value: unknown): ReturnType<typeof Commit.safeParse> {
  return compiledCommit.safeParse(value);
}
