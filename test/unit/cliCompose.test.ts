import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { NatsConnection } from "@nats-io/transport-node";
import { CLI_VERBS } from "../../src/cli/verbs.ts";
import { COMPOSE_CLI_VERB } from "../../src/cli/compose.ts";
import { renderPush } from "../../src/cli/push.ts";
import { EXIT_OK, type CliContext } from "../../src/cli/context.ts";
import { commandSubject } from "../../src/names.ts";
import { PUSH_VERB } from "../../src/push/pushCommand.ts";

/** A context whose connection records each request and answers a dry run's report. */
function recordingContext(json: boolean): { ctx: CliContext; requests: Array<{ subject: string; body: unknown }>; lines: string[] } {
  const requests: Array<{ subject: string; body: unknown }> = [];
  const lines: string[] = [];
  const report = {
    ok: true, pushId: "p1", dryRun: true, recordsSequence: 7, nodes: [{ node: "alpha", outcome: "sent", digest: "abcdef0123456789" }],
    leftOut: [], freshCredentials: [], freshProvisions: [], counts: { sent: 1 }, provisionsMinted: 0, raised: { created: 0, updated: 0, refused: [] }, timedOut: [], rounds: 0, boundHit: false,
    declarations: [{ node: "alpha", modules: [], provisions: [], digest: "abcdef0123456789" }],
  };
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
  it("is `mesh push --dry-run` under another name: one push request with dryRun, never wait, the named nodes passed on", async () => {
    assert.equal(CLI_VERBS.filter((v) => v.path.join(" ") === "compose").length, 1, "registered once");
    const { ctx, requests, lines } = recordingContext(false);
    assert.equal(await COMPOSE_CLI_VERB.run(ctx, [["alpha"]], { wait: true }), EXIT_OK);
    assert.deepEqual(requests, [{ subject: commandSubject("operator-test", PUSH_VERB), body: { v: 1, nodes: ["alpha"], wait: false, dryRun: true } }]);
    assert.ok(lines[0]!.startsWith("dry run p1"), lines.join("\n"));
  });

  it("R31: a dry run says the provisions the push would mint first; a push says the ones it minted", () => {
    const base = {
      pushId: "p1", recordsSequence: 7, nodes: [], leftOut: [], freshCredentials: [], freshProvisions: [], provisionsMinted: 2,
      raised: { created: 0, updated: 0, refused: [] }, timedOut: [], rounds: 0, boundHit: false,
    };
    assert.ok(renderPush({ ...base, dryRun: true }).includes("would mint 2 provision(s) first (R31)"));
    assert.ok(renderPush({ ...base, dryRun: false }).includes("minted 2 provision(s)"));
  });

  it("--json prints the dry run's reply as it came", async () => {
    const { ctx, lines } = recordingContext(true);
    assert.equal(await COMPOSE_CLI_VERB.run(ctx, [[]], {}), EXIT_OK);
    const printed = JSON.parse(lines.join("\n")) as { dryRun: boolean; declarations: unknown[] };
    assert.equal(printed.dryRun, true);
    assert.equal(printed.declarations.length, 1);
  });
});
