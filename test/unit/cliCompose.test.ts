import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { NatsConnection } from "@nats-io/transport-node";
import { CLI_VERBS } from "../../src/cli/verbs.ts";
import { COMPOSE_CLI_VERB } from "../../src/cli/compose.ts";
import { renderPush } from "../../src/cli/push.ts";
import { EXIT_OK, EXIT_REFUSED, type CliContext } from "../../src/cli/context.ts";
import { commandSubject } from "../../src/names.ts";
import { PUSH_VERB } from "../../src/push/pushCommand.ts";

/** A dry run's report of the whole mesh: alpha behind (a push would send it), beta unchanged. */
const WHOLE_MESH = {
  ok: true, pushId: "p1", dryRun: true, recordsSequence: 7,
  nodes: [{ node: "alpha", outcome: "sent", digest: "abcdef0123456789" }, { node: "beta", outcome: "unchanged", digest: "0123456789abcdef" }],
  leftOut: [], freshCredentials: [], freshProvisions: [], counts: { sent: 1, unchanged: 1 }, provisionsMinted: 0, raised: { created: 0, updated: 0, refused: [] }, timedOut: [], rounds: 0, boundHit: false,
  declarations: [{ node: "alpha", modules: [], provisions: [], digest: "abcdef0123456789" }, { node: "beta", modules: [], provisions: [], digest: "0123456789abcdef" }],
};

/** A context whose connection records each request and answers a dry run's report (`report`, default WHOLE_MESH). */
function recordingContext(json: boolean, report: Record<string, unknown> = WHOLE_MESH): { ctx: CliContext; requests: Array<{ subject: string; body: unknown }>; lines: string[] } {
  const requests: Array<{ subject: string; body: unknown }> = [];
  const lines: string[] = [];
  const nc = {
    info: undefined,
    request: async (subject: string, data: Uint8Array) => {
      requests.push({ subject, body: JSON.parse(new TextDecoder().decode(data)) });
      return { string: () => JSON.stringify(report) };
    },
  } as unknown as NatsConnection;
  const ctx: CliContext = {
    io: { stdout: { write: () => undefined }, stderr: { write: () => undefined }, env: {} },
    config: { credentialFile: "unused", timeoutMs: 1_000 },
    globals: { credential: "unused", json, timeoutMs: 1_000 },
    connection: async () => nc,
    asker: () => "operator-test",
    out: (line) => { lines.push(line); },
    err: (line) => { lines.push(line); },
  };
  return { ctx, requests, lines };
}

describe("mesh compose", () => {
  it("R31: is `mesh push --dry-run` of the whole mesh: one push request with dryRun, never wait, no node named (a named node is always sent), narrowed to the named nodes only when shown", async () => {
    assert.equal(CLI_VERBS.filter((v) => v.path.join(" ") === "compose").length, 1, "registered once");
    const { ctx, requests, lines } = recordingContext(false);
    assert.equal(await COMPOSE_CLI_VERB.run(ctx, [["beta"]], { wait: true }), EXIT_OK);
    assert.deepEqual(requests, [{ subject: commandSubject("operator-test", PUSH_VERB), body: { v: 1, nodes: [], wait: false, dryRun: true, seen: { sequence: 0 } } }], "and the records sequence its CLI has seen (R68: none yet)");
    assert.ok(lines[0]!.startsWith("dry run p1"), lines.join("\n"));
    const text = lines.join("\n");
    assert.match(text, /beta\s+unchanged/, "unchanged, as `mesh compose` without names says it (found by a new-user trial: it said would send)");
    assert.doesNotMatch(text, /alpha/);
  });

  it("a named node the report does not hold (not enrolled) is refused unknown-node naming it, exit 1, as `mesh push <node>` is", async () => {
    const { ctx, lines } = recordingContext(true);
    assert.equal(await COMPOSE_CLI_VERB.run(ctx, [["beta", "nosuch"]], {}), EXIT_REFUSED);
    const printed = JSON.parse(lines.filter((l) => l.startsWith("{") || !l.startsWith("mesh ")).join("\n")) as { ok: boolean; error: { code: string; field: string; message: string } };
    assert.equal(printed.ok, false);
    assert.equal(printed.error.code, "unknown-node");
    assert.equal(printed.error.field, "nodes");
    assert.ok(printed.error.message.includes("nosuch"), printed.error.message);
    assert.ok(!printed.error.message.includes("beta"), printed.error.message);
  });

  it("R59: a named node missing from a reply cut to fit is said to be not shown, not to be unknown", async () => {
    const cut = { ...WHOLE_MESH, nodes: [WHOLE_MESH.nodes[0]], omitted: { nodes: { count: 1, see: "`mesh nodes`" } } };
    const { ctx, lines } = recordingContext(true, cut);
    assert.equal(await COMPOSE_CLI_VERB.run(ctx, [["beta"]], {}), EXIT_REFUSED);
    const printed = JSON.parse(lines.filter((l) => !l.startsWith("mesh ")).join("\n")) as { ok: boolean; error: { code: string } };
    assert.equal(printed.ok, false);
    assert.notEqual(printed.error.code, "unknown-node");
  });

  it("--json with names carries counts, as `mesh push --json` does, over the nodes shown", async () => {
    const { ctx, lines } = recordingContext(true);
    assert.equal(await COMPOSE_CLI_VERB.run(ctx, [["beta"]], {}), EXIT_OK);
    const printed = JSON.parse(lines.join("\n")) as { counts?: Record<string, number>; nodes: unknown[] };
    assert.deepEqual(printed.counts, { unchanged: 1 });
    assert.equal(printed.nodes.length, 1);
  });

  it("R31: a dry run says the provisions the push would mint first; a push says the ones it minted", () => {
    const base = {
      pushId: "p1", recordsSequence: 7, nodes: [], leftOut: [], freshCredentials: [], freshProvisions: [], provisionsMinted: 2,
      raised: { created: 0, updated: 0, refused: [] }, timedOut: [], rounds: 0, boundHit: false,
    };
    assert.ok(renderPush({ ...base, dryRun: true }).includes("would mint 2 provision(s) first (R31)"));
    assert.ok(renderPush({ ...base, dryRun: false }).includes("minted 2 provision(s)"));
  });

  it("R73: a push names each previous key its list still admits and the nodes whose report ends it, and claims no refusal of that old key", () => {
    const base = {
      pushId: "p1", recordsSequence: 7, nodes: [{ node: "alpha", outcome: "applied" as const, digest: "d".repeat(64), holdsUserList: true as const }], leftOut: [],
      freshCredentials: [{ kind: "module" as const, name: "beacon" }, { kind: "operator" as const, name: "ada" }], freshProvisions: [], provisionsMinted: 0,
      raised: { created: 0, updated: 0, refused: [] }, timedOut: [], rounds: 1, boundHit: false, dryRun: false,
      overlaps: [{ principal: { kind: "module" as const, name: "beacon" }, until: ["alpha"] }],
    };
    const lines = renderPush(base);
    assert.ok(lines.some((l) => /previous key of module beacon still admitted .*R73.* until alpha reports the new one applied/.test(l)), lines.join("\n"));
    const refused = lines.filter((l) => l.includes("refuses the old ones"));
    assert.equal(refused.length, 1, lines.join("\n"));
    assert.ok(refused[0]!.endsWith(": operator ada"), refused[0]);
  });

  it("--json prints the dry run's reply as it came", async () => {
    const { ctx, lines } = recordingContext(true);
    assert.equal(await COMPOSE_CLI_VERB.run(ctx, [[]], {}), EXIT_OK);
    const printed = JSON.parse(lines.join("\n")) as { dryRun: boolean; declarations: unknown[] };
    assert.equal(printed.dryRun, true);
    assert.equal(printed.declarations.length, 2);
  });
});
