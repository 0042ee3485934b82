/**
 * R74 against a real nats-server running the composed user list over TLS: a module calls another
 * module's tool only through a `uses` line `<module>/<tool>` of its manifest; the grant is exact;
 * operators call any tool with `mesh tool call` (the built CLI, bin/mesh.js, in its own process:
 * run `node scripts/build.mjs` first).
 */
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { composeBusUsers, renderUserList } from "../../src/compose/index.ts";
import { connectToBus } from "../../src/bus/connect.ts";
import { certificateFingerprint } from "../../src/crypto/secrets.ts";
import { CATALOGUE_SUBJECTS, busUser, catalogueSubject, toolSubject } from "../../src/names.ts";
import { makeBusCertificate } from "../../installer/tls.ts";
import { startNatsServer, waitFor, type NatsServer } from "../support/natsServer.ts";
import { watchViolations } from "../support/violations.ts";
import { EXAMPLE_CONFIG, MeshBuilder } from "../unit/compose/exampleMesh.ts";

const REPO = new URL("../../", import.meta.url).pathname;
const search = { name: "search", version: "1", tools: [{ name: "query" }, { name: "reindex" }] };
const caller = { name: "caller", version: "1", uses: ["search/query"] };
const bystander = { name: "bystander", version: "1" };
/** Offers a tool nobody answers in these tests. */
const idle = { name: "idle", version: "1", tools: [{ name: "ping" }] };

/** Runs the built `mesh` with `args` in its own process; resolves with its exit code and output (never rejects on a non-zero exit). */
function meshProcess(args: readonly string[], env: Record<string, string>): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [join(REPO, "bin", "mesh.js"), ...args], { env: { PATH: process.env.PATH ?? "", ...env } }, (error, out, err) => {
      resolve({ code: error ? Number((error as { code?: unknown }).code ?? 1) : 0, out, err });
    });
  });
}

describe("R74: tools over the bus", () => {
  let dir: string;
  let server: NatsServer;
  let secrets: Record<string, string>;
  let fingerprint: string;
  let operatorFile: string;
  const open: NatsConnection[] = [];
  /** What the bus refused search, the module answering the tools. */
  let searchRefused: ReturnType<typeof watchViolations>;

  const address = () => `tls://127.0.0.1:${server.port}`;
  async function dial(user: string): Promise<NatsConnection> {
    const nc = await connectToBus({ address: address(), user, seed: secrets[user]!, fingerprint }, { reconnect: false, name: user });
    open.push(nc);
    return nc;
  }

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "mesh-tools-"));
    const made = await makeBusCertificate(dir, []);
    fingerprint = certificateFingerprint(readFileSync(made.caFile, "utf8"));
    const b = new MeshBuilder().genesis().operator("ada").register(search).register(caller).register(bystander).register(idle)
      .issue("search").issue("caller").issue("bystander");
    secrets = b.secrets;
    const list = composeBusUsers(b.state(), EXAMPLE_CONFIG);
    assert.ok(list.ok);
    server = await startNatsServer({
      files: { "users.conf": renderUserList(list) },
      config: `include "users.conf"\ntls { cert_file: "${made.certFile}", key_file: "${made.keyFile}" }`,
    });
    operatorFile = join(dir, "operator.json");
    writeFileSync(operatorFile, JSON.stringify({ address: address(), user: busUser("operator", "ada"), seed: secrets[busUser("operator", "ada")], fingerprint }), { mode: 0o600 });
    // search answers both of its tools, saying which one and what it was asked.
    const nc = await dial(busUser("module", "search"));
    searchRefused = watchViolations(nc);
    for (const tool of ["query", "reindex"]) {
      nc.subscribe(toolSubject("search", tool), { callback: (_e, m) => { m.respond(JSON.stringify({ tool, asked: m.string() })); } });
    }
    await nc.flush();
  });
  after(async () => {
    for (const nc of open) if (!nc.isClosed()) await nc.close().catch(() => undefined);
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("R74: a module whose manifest uses search/query calls that tool and gets the answer on its own inbox", async () => {
    const nc = await dial(busUser("module", "caller"));
    const violations = watchViolations(nc);
    const answer = await nc.request(toolSubject("search", "query"), "find ada", { timeout: 5_000 });
    assert.deepEqual(answer.json(), { tool: "query", asked: "find ada" });
    assert.deepEqual(violations.map((v) => v.message), []);
  });

  // Found by an attacker's trial: with allow_responses, the caller named the reply subject and the
  // honest tool's answer was published there (the records, a node's declaration, its report).
  it("R33 R74: a caller that names another subject as the reply gets nothing published there: the tool's answer is refused by the bus", async () => {
    const operator = await dial(busUser("operator", "ada"));
    const heard: string[] = [];
    operator.subscribe(CATALOGUE_SUBJECTS, { callback: (_e, m) => { heard.push(m.subject); } });
    await operator.flush();
    const nc = await dial(busUser("module", "caller"));
    const aimed = catalogueSubject("module", "search");
    nc.publish(toolSubject("search", "query"), "x", { reply: aimed });
    await nc.flush();
    await waitFor(() => searchRefused.find((v) => v.operation === "publish" && v.subject === aimed), { name: `search refused publish on ${aimed}` });
    await operator.flush();
    assert.deepEqual(heard, [], "nothing reached the records' subjects");
  });

  it("R74: the grant is exact: the same module is refused the tool it does not use, and a module without the use is refused", async () => {
    for (const [user, tool] of [[busUser("module", "caller"), "reindex"], [busUser("module", "bystander"), "query"]] as const) {
      const nc = await dial(user);
      const violations = watchViolations(nc);
      const subject = toolSubject("search", tool);
      await nc.request(subject, "x", { timeout: 1_000 }).then(() => assert.fail(`${user} was answered on ${subject}`), () => undefined);
      await waitFor(() => violations.find((v) => v.operation === "publish" && v.subject === subject), { name: `${user} refused publish on ${subject}` });
    }
  });

  it("R74: an operator calls any tool with mesh tool call, its answer printed as is or as data (-o json)", async () => {
    const env = { MESH_CREDENTIAL: operatorFile };
    const text = await meshProcess(["tool", "call", "search", "query", '{"q":"ada"}'], env);
    assert.equal(text.code, 0, text.err);
    assert.deepEqual(JSON.parse(text.out), { tool: "query", asked: '{"q":"ada"}' });
    const data = await meshProcess(["tool", "call", "search", "reindex", "-o", "json"], env);
    assert.equal(data.code, 0, data.err);
    assert.deepEqual(JSON.parse(data.out), { ok: true, module: "search", tool: "reindex", subject: toolSubject("search", "reindex"), reply: { tool: "reindex", asked: "" } });
  });

  it("R74: mesh tool call says clearly when nothing answers or the bus refuses, and refuses a body that is not JSON before dialling", async () => {
    const env = { MESH_CREDENTIAL: operatorFile };
    const code = (run: { out: string }) => (JSON.parse(run.out) as { error: { code: string } }).error.code;
    const quiet = await meshProcess(["tool", "call", "idle", "ping", "--timeout", "2000", "-o", "json"], env);
    assert.equal(quiet.code, 1, quiet.err);
    assert.equal(code(quiet), "no-responders", quiet.out);
    assert.match(quiet.err, /nothing answers mesh\.tool\.idle\.ping/);
    // a tool no manifest offers: the operator has no grant on it
    const unknown = await meshProcess(["tool", "call", "search", "missing", "--timeout", "1500", "-o", "json"], env);
    assert.equal(unknown.code, 1, unknown.err);
    assert.ok(["refused", "timeout"].includes(code(unknown)), unknown.out);
    const bad = await meshProcess(["tool", "call", "search", "query", "{not json"], env);
    assert.equal(bad.code, 2);
    assert.match(bad.err, /\[json\]: is not JSON/);
  });
});
