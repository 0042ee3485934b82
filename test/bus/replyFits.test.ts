/**
 * R59 for command replies that grow with the mesh (issue 13): `assign`/`unassign` answer every
 * node the module is on, `overlay.place` every stale credential, a push one line per node. The
 * harness's server takes at most 4 KiB per message, so a few dozen nodes with long names pass it
 * (as ~10,000 do under the default 1 MiB): each reply still fits, the growing list cut, with how
 * many were left out and where to read them.
 */
import { enrolRequest } from "../support/enrol.ts";
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { startCommandMesh, type CommandMesh } from "../support/commandMesh.ts";
import { askAs } from "../support/client.ts";
import type { Reply } from "../../src/commands/envelope.ts";
import type { Omitted } from "../../src/commands/fit.ts";
import { inboxPrefix } from "../../src/names.ts";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { startNatsServer, type NatsServer } from "../support/natsServer.ts";
import { controllerFixture, type ControllerFixture } from "../support/controller.ts";
import type { PushReply } from "../../src/push/pushCommand.ts";
import { EXIT_OK } from "../../src/cli/context.ts";
import { runMesh, type CliRun } from "../support/cli.ts";

const OPERATOR = "operator-ann";
const MAX_PAYLOAD = 4096;
const NODES = 70;

type Ok = Extract<Reply, { ok: true }>;

describe("R59: command replies past the bus's max payload", () => {
  let mesh: CommandMesh;
  let nc: NatsConnection;
  // Long names (60 characters): 70 of them are about 4.4 KiB of JSON.
  const names = Array.from({ length: NODES }, (_, i) => `node-${String(i).padStart(3, "0")}-${"x".repeat(51)}`);

  before(async () => {
    mesh = await startCommandMesh({ server: { config: `max_payload: ${MAX_PAYLOAD}` } });
    nc = await connect({ servers: mesh.server.url, inboxPrefix: inboxPrefix(OPERATOR) });
    for (const node of names) {
      const reply = await askAs(nc, OPERATOR, "node.enrol", enrolRequest(node));
      assert.ok(reply.ok, JSON.stringify(reply));
    }
    const registered = await askAs(nc, OPERATOR, "module.register", { manifest: { name: "web", version: "1.0.0" } });
    assert.ok(registered.ok, JSON.stringify(registered));
  });
  after(async () => {
    await nc?.close();
    await mesh?.stop();
  });

  /** Sends and checks the reply is ok and within the max payload. */
  async function fits(verb: string, body: Record<string, unknown>): Promise<Ok> {
    const reply = await askAs(nc, OPERATOR, verb, body);
    assert.ok(reply.ok, `${verb}: ${JSON.stringify(reply).slice(0, 300)}`);
    assert.ok(Buffer.byteLength(JSON.stringify(reply)) <= MAX_PAYLOAD);
    return reply as Ok;
  }

  it("R59: assign and unassign to a module on more nodes than a reply holds: ok, the node list cut, the rest counted and where to read them", async () => {
    let last: Ok | undefined;
    for (const node of names) last = await fits("assign", { module: "web", node });
    const nodes = last!.nodes as string[];
    const omitted = (last!.omitted as Record<string, Omitted> | undefined)?.nodes;
    assert.ok(omitted, "the list was cut");
    assert.equal(nodes.length + omitted.count, NODES, "every node is either listed or counted");
    assert.ok(omitted.see.length > 0);
    assert.equal(last!.node, names[NODES - 1], "the node assigned is always named");
    const off = await fits("unassign", { module: "web", node: names[0] });
    assert.equal((off.nodes as string[]).length + ((off.omitted as Record<string, Omitted>).nodes?.count ?? 0), NODES - 1);
  });

  it("R59 R10: overlay.place with more stale credentials than a reply holds: ok, cut, counted", async () => {
    await fits("overlay.place", { node: names[0], hub: true });
    let last: Ok | undefined;
    for (const node of names.slice(1)) last = await fits("overlay.place", { node });
    const stale = last!.staleCredentials as unknown[];
    const omitted = (last!.omitted as Record<string, Omitted> | undefined)?.staleCredentials;
    assert.ok(omitted, "the list was cut");
    assert.equal(stale.length + omitted.count, NODES - 1, "every placed node's credential is stale (it keeps the genesis address)");
  });
});

describe("R59: the push reply past the bus's max payload", () => {
  let server: NatsServer;
  let fixture: ControllerFixture;
  let operatorFile: string;
  const names = Array.from({ length: 40 }, (_, i) => `push-${String(i).padStart(3, "0")}`);

  before(async () => {
    server = await startNatsServer({ config: `max_payload: ${MAX_PAYLOAD}` });
    fixture = await controllerFixture(server);
    await fixture.start();
    for (const node of names) await fixture.enrol(node);
    operatorFile = join(fixture.dir, "operator.json");
    writeFileSync(operatorFile, JSON.stringify({ address: server.url, user: "operator-test", password: "unused" }), { mode: 0o600 });
  });
  after(async () => {
    await fixture?.close();
    await server?.stop();
  });

  const cli = (...argv: string[]): Promise<CliRun> => runMesh(argv, { MESH_CREDENTIAL: operatorFile });

  it("R59: a push whose report passes the max payload answers ok within it: counts per outcome over every node, the node lines cut and counted, where to read the rest", async () => {
    // A dry run composes and reports every node (sent, with its declaration) and records nothing.
    const reply = await askAs(fixture.operator, "operator-test", "push", { dryRun: true }, 20_000);
    assert.ok(reply.ok, JSON.stringify(reply).slice(0, 300));
    assert.ok(Buffer.byteLength(JSON.stringify(reply)) <= MAX_PAYLOAD);
    const fitted = reply as unknown as PushReply;
    assert.equal(fitted.counts.sent, names.length, "the counts cover every node");
    const omitted = fitted.omitted?.nodes;
    assert.ok(omitted, "the node lines were cut");
    assert.equal(fitted.nodes.length + omitted.count, names.length);
    assert.match(omitted.see, /mesh history push/);

    const json = await cli("push", "--dry-run", "--json");
    assert.equal(json.code, EXIT_OK, json.err);
    const printed = JSON.parse(json.out) as PushReply;
    assert.equal(printed.counts.sent, names.length);
    const text = await cli("push", "--dry-run");
    assert.equal(text.code, EXIT_OK, text.err);
    assert.match(text.out, new RegExp(`${names.length} would send`), "the summary counts every node");
    assert.match(text.out, /more nodes not shown/);
  });
});
