import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { explain, ExplainRequest, parseRequest } from "../../../src/commands/index.ts";
import { CONTROLLER_NAME, SHARED_INBOX_SUBJECTS, inboxSubjects, principalKey, workSubject } from "../../../src/names.ts";
import { QueryRefused } from "../../../src/commands/envelope.ts";
import { explainBody, explainExitCode, renderExplain, renderGrants } from "../../../src/cli/explain.ts";
import { UsageError } from "../../../src/cli/context.ts";
import { EXAMPLE_CONFIG, exampleMesh } from "../compose/exampleMesh.ts";
import { DeliveredMap, credentialEntries, evolve, type SequencedCommit } from "../../../src/projections/index.ts";
import type { MeshEvent } from "../../../src/events/index.ts";
import { createUser } from "@nats-io/nkeys";

/** The answer as the CLI receives it: through JSON, inside `{ ok: true, ... }`. */
function asReply(answer: unknown): Record<string, unknown> {
  return { ok: true, asOf: 1, ...(JSON.parse(JSON.stringify(answer)) as Record<string, unknown>) };
}

describe("explain query and mesh explain", () => {
  const { state } = exampleMesh();

  it("R4: allowed with the manifest line behind it; the CLI prints `allowed:` lines and exits 0", () => {
    const answer = explain.answer(state, { kind: "module", name: "showcase", direction: "pub", subject: workSubject("mesh-build", "build") }, { compose: EXAMPLE_CONFIG });
    const reply = asReply(answer);
    assert.equal(reply.allowed, true);
    assert.equal(reply.assumed, undefined, "the lent configuration is used");
    const lines = renderExplain(reply);
    assert.ok(lines.some((l) => l.startsWith("allowed: ") && l.includes("manifest of showcase")), lines.join("\n"));
    assert.equal(explainExitCode(reply), 0);
  });

  it("R33: another's inbox and _INBOX.> are denied with a reason; the CLI prints `denied:` and exits 1", () => {
    for (const subject of [inboxSubjects("operator-ada"), SHARED_INBOX_SUBJECTS]) {
      const reply = asReply(explain.answer(state, { kind: "node", name: "alpha", direction: "sub", subject }, { compose: EXAMPLE_CONFIG }));
      assert.equal(reply.allowed, false, subject);
      const lines = renderExplain(reply);
      assert.ok(lines.some((l) => l.startsWith("denied: ")), lines.join("\n"));
      assert.equal(explainExitCode(reply), 1);
    }
  });

  it("R19: the controller's submit list comes from the configuration the shell lends; without it the answer says what it assumed", () => {
    const query = { kind: "controller", name: CONTROLLER_NAME, direction: "pub", subject: workSubject("mesh-build", "build") } as const;
    const lent = asReply(explain.answer(state, query, { compose: EXAMPLE_CONFIG }));
    assert.equal(lent.allowed, true);
    const none = asReply(explain.answer(state, query));
    assert.equal(none.allowed, false);
    assert.equal(typeof none.assumed, "string");
  });

  it("R12: allowed by composition but without a credential exits 1: the bus would refuse the connection", () => {
    // A registered module whose credential is not minted yet.
    const key = principalKey("module", "showcase");
    const unissued = { ...state, credentials: new DeliveredMap(credentialEntries(state.credentials).filter(([k]) => k !== key)) };
    const reply = asReply(explain.answer(unissued, { kind: "module", name: "showcase", direction: "sub", subject: inboxSubjects("module-showcase") }, { compose: EXAMPLE_CONFIG }));
    assert.equal(reply.allowed, true);
    assert.equal(reply.onTheBus, false);
    assert.equal(explainExitCode(reply), 1);
  });

  it("a principal the records do not know is not-found (field name), with or without a subject, not a denial", () => {
    for (const query of [
      { kind: "module", name: "no-such-module", direction: "sub", subject: "a.b" },
      { kind: "node", name: "no-such-node" },
      { kind: "operator", name: "nobody" },
    ] as const) {
      const answer = explain.answer(state, query, { compose: EXAMPLE_CONFIG });
      assert.ok(answer instanceof QueryRefused, JSON.stringify(query));
      assert.equal(answer.refusal.code, "not-found");
      assert.equal(answer.refusal.field, "name");
    }
    assert.ok(!(explain.answer(state, { kind: "controller", name: CONTROLLER_NAME }, { compose: EXAMPLE_CONFIG }) instanceof QueryRefused));
  });

  it("without direction and subject: every grant of the principal, each with the line or record behind it", () => {
    const reply = asReply(explain.answer(state, { kind: "module", name: "showcase" }, { compose: EXAMPLE_CONFIG }));
    const grants = reply.grants as Array<{ direction: string; subject: string; because: string }>;
    assert.ok(grants.some((g) => g.direction === "pub" && g.subject === workSubject("mesh-build", "build") && g.because.includes("manifest of showcase")), JSON.stringify(grants));
    assert.equal(reply.onTheBus, true);
    assert.equal(explainExitCode(reply), 0);
    assert.ok(!parseRequest(ExplainRequest, { kind: "node", name: "alpha", direction: "sub" }).ok, "a direction without a subject is refused");
  });

  it("refuses a bad request: unknown kind, direction other than pub or sub, a subject with spaces or an empty token", () => {
    const base = { kind: "node", name: "alpha", direction: "sub", subject: "a.b" };
    assert.ok(parseRequest(ExplainRequest, base).ok);
    for (const [field, value] of [["kind", "robot"], ["direction", "both"], ["subject", "a b"], ["subject", "a..b"], ["subject", ""]] as const) {
      const parsed = parseRequest(ExplainRequest, { ...base, [field]: value });
      assert.ok(!parsed.ok && parsed.refusal.code === "invalid-request" && parsed.refusal.field === field, `${field}=${value}`);
    }
    assert.throws(() => explainBody(["node", "alpha", "both", "a.b"]), UsageError);
  });

  describe("right after `mesh credential rotate`, before the push that installs the key (found by a new-user trial)", () => {
    const { state: base, commits } = exampleMesh();
    let sequence = commits.length;
    /** One more commit of one event, at the next sequence. */
    const commit = (kind: string, id: string, event: Record<string, unknown>): SequencedCommit => {
      sequence += 1;
      const commandId = `more-${sequence}`;
      return { sequence, commit: { commandId, entity: { kind, id }, events: [{ actor: "test", commandId, at: "2026-01-02T00:00:00.000Z", ...event }] as unknown as MeshEvent[] } };
    };
    // The broker's holder (alpha) was sent a user list composed from the records as they were.
    const sent = () => commit("node", "alpha", { type: "DeclarationSent", node: "alpha", digest: "a".repeat(64), recordsSequence: sequence });
    const pushed = evolve(base, [sent()]);
    const rotated = evolve(pushed, [commit("module", "showcase", {
      type: "CredentialRotated", principal: { kind: "module", name: "showcase" }, user: "module-showcase",
      nkey: createUser().getPublicKey(), sealed: "sealed:rotated", address: "tls://bus.example.net:4222",
    })]);
    const pushedAgain = evolve(rotated, [sent()]);
    const subject = { kind: "module", name: "showcase", direction: "pub", subject: workSubject("mesh-build", "build") } as const;

    it("R50: says the records' key is installed on the bus by the next push, never that it is on the bus, with or without a subject", () => {
      for (const query of [subject, { kind: "module", name: "showcase" } as const]) {
        const reply = asReply(explain.answer(rotated, query, { compose: EXAMPLE_CONFIG }));
        assert.equal(reply.keyUnsent, true, JSON.stringify(query));
        const text = (Array.isArray(reply.grants) ? renderGrants(reply) : renderExplain(reply)).join("\n");
        assert.match(text, /next push/, text);
        assert.doesNotMatch(text, /is refused once/, text);
      }
    });

    it("R50: once a push sent the broker's holder a list composed after the rotation, the key is no longer said to wait for one; the old key is said refused once the holder applies that list, not once a push carries it (a new-user trial: its holder's agent was stopped)", () => {
      for (const state of [pushedAgain, pushed]) {
        // With a subject and without (a verification trial: the listing said nothing of the key).
        for (const query of [subject, { kind: "module", name: "showcase" } as const]) {
          const reply = asReply(explain.answer(state, query, { compose: EXAMPLE_CONFIG }));
          assert.equal(reply.keyUnsent, undefined);
          const text = (Array.isArray(reply.grants) ? renderGrants(reply) : renderExplain(reply)).join("\n");
          assert.doesNotMatch(text, /next push/);
          assert.doesNotMatch(text, /once a push carries/, text);
          assert.match(text, /once the broker's holder applies/, text);
        }
      }
    });
  });
});
