/**
 * R68, pure: what the controller believes of an asker's `seen` (src/commands/seen.ts), the tag it
 * vouches with (seenTag), and the client's side of the field (splitSeen, refusesSeen, and a client
 * over a stand-in connection: a controller of this release and one from before R68). The bus side
 * is test/bus/wholeFolderRestore.test.ts.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { NatsConnection } from "@nats-io/transport-node";
import { judgeSeen, seenAhead, takeSeen, withSeen, type SeenVouch } from "../../../src/commands/seen.ts";
import { meshClient, refusesSeen, splitSeen, type SeenMemory } from "../../../src/client/client.ts";
import { newMeshKey, recordsTag, seenTag, seenTagVerifies } from "../../../src/crypto/secrets.ts";
import type { Seen } from "../../../src/contracts/verbs.ts";

/** A stand-in for the mesh key's tag: what only the controller could write for `sequence`. */
const vouch: SeenVouch = { tag: (sequence) => `t${sequence}`.padEnd(43, "x"), verifies: (sequence, tag) => tag === `t${sequence}`.padEnd(43, "x") };

describe("judgeSeen and seenAhead (R68): a claim counts only past what the controller knows, with its tag, past the records' end", () => {
  it("R68: every combination of claimed sequence and tag is judged as the rule says", () => {
    const KNOWN = 46;
    for (const sequence of [0, KNOWN - 1, KNOWN, KNOWN + 1, 999999]) {
      for (const tag of [undefined, vouch.tag(sequence), vouch.tag(sequence + 1), "rubbish"]) {
        const judged = judgeSeen(tag === undefined ? { sequence } : { sequence, tag }, KNOWN, vouch.verifies);
        const expected = sequence <= KNOWN ? "none" : tag === undefined ? "untagged" : tag === vouch.tag(sequence) ? "ahead" : "tag-refused";
        assert.equal(judged.kind, expected, `${sequence} ${tag}`);
      }
    }
  });

  it("R68: the evidence names the asker, the sequence it saw and where the records end; none when they reach it", () => {
    const evidence = seenAhead("operator-ana", 50, 46);
    assert.equal(evidence?.kind, "operator-seen-ahead");
    assert.match(evidence!.detail, /operator-ana/);
    assert.match(evidence!.detail, /\b50\b.*\b46\b/);
    assert.equal(seenAhead("operator-ana", 46, 46), null);
    assert.equal(seenAhead("operator-ana", 12, 46), null);
  });
});

describe("takeSeen and withSeen (R68): seen is beside a verb's fields, never one of them", () => {
  it("R68: taken out of the fields when present and valid; absent is undefined; a bad shape is refused on field seen", () => {
    assert.deepEqual(takeSeen({ node: "a" }), { ok: true, seen: undefined, rest: { node: "a" } });
    assert.deepEqual(takeSeen({ node: "a", seen: { sequence: 3, tag: vouch.tag(3) } }), { ok: true, seen: { sequence: 3, tag: vouch.tag(3) }, rest: { node: "a" } });
    for (const bad of [{ sequence: -1 }, { sequence: 1.5 }, { sequence: 2, tag: "short" }, { sequence: 2, extra: true }, 7, null]) {
      const taken = takeSeen({ seen: bad });
      assert.deepEqual(taken.ok ? ["ok"] : [taken.refusal.code, taken.refusal.field], ["invalid-request", "seen"], JSON.stringify(bad));
    }
  });

  it("R68: an accepted reply carries the controller's tag on the sequence given; a refusal vouches for nothing", () => {
    assert.deepEqual(withSeen({ ok: true, asOf: 9 }, 9, vouch), { ok: true, asOf: 9, seen: { sequence: 9, tag: vouch.tag(9) } });
    const refused = { ok: false as const, error: { code: "records-behind", message: "m" } };
    assert.deepEqual(withSeen(refused, 9, vouch), refused);
  });
});

describe("seenTag (R68): the controller's tag on a sequence, under the mesh key", () => {
  it("R68: verifies for its sequence and key only, and is never a records tag", () => {
    const key = newMeshKey();
    const tag = seenTag(key, 41);
    assert.match(tag, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(seenTagVerifies(key, 41, tag), true);
    assert.equal(seenTagVerifies(key, 42, tag), false);
    assert.equal(seenTagVerifies(newMeshKey(), 41, tag), false);
    for (const bad of [undefined, 41, "", "x".repeat(43), `${tag}=`]) assert.equal(seenTagVerifies(key, 41, bad), false);
    assert.equal(seenTagVerifies(key, -1, seenTag(key, -1)), false);
    const records = recordsTag(key, { node: "n", digest: "d", recordsSequence: 41 });
    assert.equal(seenTagVerifies(key, 41, records), false, "a declaration's tag is not a seen tag");
  });
});

/** A client over a stand-in connection whose controller answers with `answer(body)`; the bodies it was sent. */
function clientOver(answer: (body: Record<string, unknown>) => Record<string, unknown>, memory: SeenMemory) {
  const sent: Array<Record<string, unknown>> = [];
  const nc = {
    info: { max_payload: 1024 * 1024 },
    request: async (_subject: string, data: Uint8Array) => {
      const body = JSON.parse(new TextDecoder().decode(data)) as Record<string, unknown>;
      sent.push(body);
      const reply = JSON.stringify(answer(body));
      return { string: () => reply };
    },
  } as unknown as NatsConnection;
  return { client: meshClient(nc, "operator-ana", {}, memory), sent };
}

/** A seen memory in a variable, counting what it kept. */
function memoryOf(start?: Seen): SeenMemory & { kept: Seen[] } {
  let now = start;
  const kept: Seen[] = [];
  return { kept, read: () => now, keep: (seen) => { kept.push(seen); now = seen; } };
}

describe("the client's seen (R68): sent with every command, the highest kept, and an older controller still served", () => {
  const nodes = { ok: true, v: 1, asOf: 7, nodes: [] };

  it("R68: sends { sequence: 0 } before it has seen anything, then the highest kept; keeps a higher seen and parses the reply without it", async () => {
    const memory = memoryOf();
    const { client, sent } = clientOver(() => ({ ...nodes, seen: { sequence: 7, tag: vouch.tag(7) } }), memory);
    const first = await client.nodes();
    assert.equal(first.ok, true, JSON.stringify(first));
    assert.equal(Object.hasOwn(first, "seen"), false, "the verb's strict contract reads the reply without seen");
    assert.deepEqual(sent[0]?.seen, { sequence: 0 });
    assert.deepEqual(memory.kept, [{ sequence: 7, tag: vouch.tag(7) }]);
    await client.nodes();
    assert.deepEqual(sent[1]?.seen, { sequence: 7, tag: vouch.tag(7) });
    assert.equal(memory.kept.length, 1, "the same sequence is not written again");
  });

  it("R68: a controller from before R68 refuses the field: the command is sent again without it, and no later one carries it", async () => {
    const memory = memoryOf({ sequence: 3, tag: vouch.tag(3) });
    const { client, sent } = clientOver((body) => (Object.hasOwn(body, "seen")
      ? { ok: false, v: 1, error: { code: "invalid-request", message: "unknown field \"seen\"", field: "seen" } }
      : nodes), memory);
    assert.equal((await client.nodes()).ok, true);
    assert.equal((await client.nodes()).ok, true);
    assert.deepEqual(sent.map((body) => Object.hasOwn(body, "seen")), [true, false, false]);
  });

  it("R68: splitSeen takes only a tagged seen; refusesSeen is the refusal of the field itself", () => {
    assert.deepEqual(splitSeen({ ok: true, asOf: 1, seen: { sequence: 1, tag: vouch.tag(1) } }), { reply: { ok: true, asOf: 1 }, seen: { sequence: 1, tag: vouch.tag(1) } });
    assert.deepEqual(splitSeen({ ok: true, asOf: 1, seen: { sequence: 1 } }), { reply: { ok: true, asOf: 1 }, seen: undefined });
    assert.deepEqual(splitSeen({ ok: true, asOf: 1 }), { reply: { ok: true, asOf: 1 }, seen: undefined });
    assert.equal(refusesSeen({ ok: false, error: { code: "invalid-request", message: "m", field: "seen" } }), true);
    assert.equal(refusesSeen({ ok: false, error: { code: "invalid-request", message: "m", field: "node" } }), false);
    assert.equal(refusesSeen({ ok: false, error: { code: "records-behind", message: "m" } }), false);
  });
});
