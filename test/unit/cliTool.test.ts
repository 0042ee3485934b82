/**
 * `mesh tool call` without a server (R74: operators may call any tool): its help, the usage
 * errors it gives before dialling, and how a failed request is told. Over a real server:
 * test/bus/tools.test.ts.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { errors } from "@nats-io/transport-node";
import { runCli } from "../../src/cli/run.ts";
import { EXIT_OK, EXIT_USAGE, type CliIo } from "../../src/cli/context.ts";
import { CLI_VERBS } from "../../src/cli/verbs.ts";
import { toolCallFailureOf, toolNotOffered } from "../../src/cli/tool.ts";
import { toolSubject } from "../../src/names.ts";

function memoryIo(env: Record<string, string> = {}): CliIo & { out(): string; err(): string } {
  let out = "";
  let err = "";
  return { stdout: { write: (s: string) => { out += s; } }, stderr: { write: (s: string) => { err += s; } }, env, out: () => out, err: () => err };
}
const verbs = CLI_VERBS;

describe("mesh tool call", () => {
  it("R74: its help says what it does in words (no rule id) and ends with examples that run it", async () => {
    const io = memoryIo();
    assert.equal(await runCli(["tool", "call", "--help"], io, verbs), EXIT_OK);
    assert.doesNotMatch(io.out(), /\bR\d+\b/);
    assert.match(io.out(), /Examples:\n[\s\S]*\$ mesh tool call /);
  });

  it("R74: a bad module or tool name, or a body that is not JSON, is a usage error naming the argument, before any dial", async () => {
    for (const [args, named] of [[["Bad", "t"], "<module>"], [["m", "t.x"], "<tool>"], [["m", "t", "{nope"], "[json]"]] as const) {
      const io = memoryIo({ MESH_CREDENTIAL: "/nonexistent/operator.json" });
      assert.equal(await runCli(["tool", "call", ...args], io, verbs), EXIT_USAGE);
      assert.ok(io.err().includes(`tool call: ${named}`), io.err());
    }
  });

  it("R74: a request nobody answers, one that times out and one the bus refuses are told apart", () => {
    const subject = toolSubject("m", "t");
    assert.equal(toolCallFailureOf(new errors.NoRespondersError(subject), subject, 1000, "operator-ada").code, "no-responders");
    assert.equal(toolCallFailureOf(new errors.TimeoutError(), subject, 1000, "operator-ada").code, "timeout");
    const refused = toolCallFailureOf(new errors.PermissionViolationError("Permissions Violation for Publish to \"x\"", "publish", subject), subject, 1000, "operator-ada");
    assert.equal(refused.code, "refused");
    assert.match(refused.message, /mesh explain operator ada pub mesh\.tool\.m\.t/);
  });

  it("R74: a call to a module or tool no registered module offers is not-found, naming the closest and what the module offers", () => {
    const modules = [{ name: "search", tools: ["query", "reindex"] }, { name: "quiet", tools: [] }];
    assert.equal(toolNotOffered("search", "query", modules), null);
    assert.deepEqual(toolNotOffered("serch", "query", modules), { code: "not-found", message: 'no module "serch" (did you mean search?): `mesh get module` lists them' });
    assert.deepEqual(toolNotOffered("search", "qery", modules), { code: "not-found", message: 'module search offers no tool "qery" (did you mean query?): it offers query, reindex' });
    assert.deepEqual(toolNotOffered("quiet", "ping", modules), { code: "not-found", message: 'module quiet offers no tool "ping": it offers no tools' });
  });
});
