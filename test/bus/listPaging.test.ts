/**
 * R59: no reply exceeds the bus's max payload. The harness's server takes at most 4 KiB per
 * message, so a few dozen nodes make the unpaged `nodes` and `credentials` replies too large, as
 * ~6,000 nodes do under the default 1 MiB: the lists come in pages with a `continue` token, and the
 * CLI follows them.
 */
import { enrolRequest } from "../support/enrol.ts";
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { startCommandMesh, type CommandMesh } from "../support/commandMesh.ts";
import { askAs } from "../support/client.ts";
import { EXIT_OK } from "../../src/cli/context.ts";
import type { Reply } from "../../src/commands/envelope.ts";
import { inboxPrefix } from "../../src/names.ts";
import { runMesh, type CliRun } from "../support/cli.ts";

const OPERATOR = "operator-ann";
const MAX_PAYLOAD = 4096;
const NODES = 40;

type Ok = Extract<Reply, { ok: true }>;

describe("R59: list replies past the bus's max payload", () => {
  let mesh: CommandMesh;
  let nc: NatsConnection;
  let dir: string;
  let credentialFile: string;
  const names = Array.from({ length: NODES }, (_, i) => `node-${String(i).padStart(3, "0")}`);

  before(async () => {
    mesh = await startCommandMesh({ server: { config: `max_payload: ${MAX_PAYLOAD}` } });
    nc = await connect({ servers: mesh.server.url, inboxPrefix: inboxPrefix(OPERATOR) });
    for (const node of names) {
      const reply = await askAs(nc, OPERATOR, "node.enrol", enrolRequest(node));
      assert.ok(reply.ok, JSON.stringify(reply));
    }
    dir = mkdtempSync(join(tmpdir(), "mesh-paging-"));
    credentialFile = join(dir, "operator.json");
    writeFileSync(credentialFile, JSON.stringify({ address: mesh.server.url, user: OPERATOR, password: "operator-password" }));
  });
  after(async () => {
    await nc?.close();
    await mesh?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Sends `verb` and follows its pages; every reply ok and within the max payload. */
  async function followed(verb: string, field: string, body: Record<string, unknown> = {}): Promise<{ items: Array<Record<string, unknown>>; pages: number }> {
    const items: Array<Record<string, unknown>> = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const reply = await askAs(nc, OPERATOR, verb, { ...body, ...(token === undefined ? {} : { continue: token }) });
      assert.ok(reply.ok, `${verb}: ${JSON.stringify(reply)}`);
      assert.ok(Buffer.byteLength(JSON.stringify(reply)) <= MAX_PAYLOAD);
      items.push(...((reply as Ok)[field] as Array<Record<string, unknown>>));
      token = (reply as Ok).continue as string | undefined;
      pages += 1;
      assert.ok(pages <= NODES + 5, "the pages end");
    } while (token !== undefined);
    return { items, pages };
  }

  const cli = (...argv: string[]): Promise<CliRun> => runMesh(argv, { MESH_CREDENTIAL: credentialFile });

  it("R59: nodes and credentials answer in pages that fit the max payload; followed, every item once, in order", async () => {
    const nodes = await followed("nodes", "nodes");
    assert.ok(nodes.pages > 1, "the list took more than one page");
    assert.deepEqual(nodes.items.map((n) => n.name), names);
    const credentials = await followed("credentials", "credentials");
    assert.ok(credentials.pages > 1);
    const users = credentials.items.map((c) => String(c.user));
    assert.equal(new Set(users).size, users.length, "no credential twice");
    assert.ok(users.length >= NODES);
  });

  it("R59: limit caps a page; a continue token stays valid across catalogue changes; a foreign token is refused invalid-continue", async () => {
    const first = await askAs(nc, OPERATOR, "nodes", { limit: 3 }) as Ok;
    assert.deepEqual((first.nodes as Array<{ name: string }>).map((n) => n.name), names.slice(0, 3));
    assert.equal(typeof first.continue, "string");
    // A node enrolled before the position, and the last one handed out removed: the token still
    // names the position, so the next page starts at the first node after it.
    assert.ok((await askAs(nc, OPERATOR, "node.enrol", enrolRequest("node-000a"))).ok);
    assert.ok((await askAs(nc, OPERATOR, "node.remove", { node: names[2] })).ok);
    const second = await askAs(nc, OPERATOR, "nodes", { limit: 3, continue: first.continue }) as Ok;
    assert.deepEqual((second.nodes as Array<{ name: string }>).map((n) => n.name), names.slice(3, 6));
    const foreign = await askAs(nc, OPERATOR, "credentials", { continue: first.continue });
    assert.ok(!foreign.ok);
    assert.equal(foreign.error.code, "invalid-continue");
    assert.equal(foreign.error.field, "continue");
    const garbage = await askAs(nc, OPERATOR, "nodes", { continue: "not-a-token" });
    assert.ok(!garbage.ok);
    assert.equal(garbage.error.code, "invalid-continue");
    const badLimit = await askAs(nc, OPERATOR, "nodes", { limit: 0 });
    assert.ok(!badLimit.ok);
    assert.equal(badLimit.error.field, "limit");
    // Put the mesh back as the other tests expect it.
    assert.ok((await askAs(nc, OPERATOR, "node.remove", { node: "node-000a" })).ok);
    assert.ok((await askAs(nc, OPERATOR, "node.enrol", enrolRequest(names[2]!))).ok);
  });

  it("R59: the CLI follows pages by default (--json: one array); --limit and --continue give one page and its token", async () => {
    const all = await cli("nodes", "--json");
    assert.equal(all.code, EXIT_OK, all.err);
    const reply = JSON.parse(all.out) as { ok: boolean; nodes: Array<{ name: string }>; continue?: string };
    assert.ok(Array.isArray(reply.nodes));
    assert.deepEqual(reply.nodes.map((n) => n.name), names);
    assert.equal(reply.continue, undefined);
    const text = await cli("nodes");
    assert.equal(text.code, EXIT_OK, text.err);
    for (const name of names) assert.match(text.out, new RegExp(`\\b${name}\\b`));

    const page = await cli("nodes", "--limit", "5", "--json");
    assert.equal(page.code, EXIT_OK, page.err);
    const one = JSON.parse(page.out) as { nodes: Array<{ name: string }>; continue: string };
    assert.deepEqual(one.nodes.map((n) => n.name), names.slice(0, 5));
    const next = await cli("nodes", "--limit", "5", "--continue", one.continue, "--json");
    assert.equal(next.code, EXIT_OK, next.err);
    assert.deepEqual((JSON.parse(next.out) as { nodes: Array<{ name: string }> }).nodes.map((n) => n.name), names.slice(5, 10));
    const human = await cli("nodes", "--limit", "5");
    assert.equal(human.code, EXIT_OK, human.err);
    assert.match(human.err, /--continue \S+/, "a page that is not the last says how to get the next");
  });
});
