import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { explain, ExplainRequest, parseRequest } from "../../../src/commands/index.ts";
import { CONTROLLER_NAME, SHARED_INBOX_SUBJECTS, inboxSubjects, workSubject } from "../../../src/names.ts";
import { explainBody, explainExitCode, renderExplain } from "../../../src/cli/explain.ts";
import { UsageError } from "../../../src/cli/context.ts";
import { EXAMPLE_CONFIG, exampleMesh } from "../compose/exampleMesh.ts";

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
    const reply = asReply(explain.answer(state, { kind: "module", name: "no-such-module", direction: "sub", subject: inboxSubjects("module-no-such-module") }, { compose: EXAMPLE_CONFIG }));
    assert.equal(reply.allowed, true);
    assert.equal(reply.onTheBus, false);
    assert.equal(explainExitCode(reply), 1);
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
});
