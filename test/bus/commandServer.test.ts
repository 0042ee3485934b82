import { enrolRequest } from "../support/enrol.ts";
import { describe, it, before, after, beforeEach, afterEach } from "node:test";
import assert from "node:assert/strict";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { startCommandMesh, type CommandMesh } from "../support/commandMesh.ts";
import { startNatsServer, waitFor } from "../support/natsServer.ts";
import { replyInAskersInbox, replyErrorOf, serveCommands, MAX_COMMAND_BYTES } from "../../src/serve/server.ts";
import { MAX_JSON_DEPTH } from "../../src/commands/validation.ts";
import { askAs } from "../support/client.ts";
import type { Catalogue } from "../../src/records/catalogue.ts";
import { FencedAppend, FenceRetriesExhausted, InvalidEvent, ReadInterrupted } from "../../src/records/errors.ts";
import { newNodeKeyPair, newUserKey, secretMatches } from "../../src/crypto/secrets.ts";
import { commandSubject, inboxPrefix, principalKey } from "../../src/names.ts";
import type { Reply } from "../../src/commands/envelope.ts";
import { credentialAt, nodeOf } from "../../src/projections/index.ts";

type Ok = Extract<Reply, { ok: true }>;
const OPERATOR = "operator-ann";

function refusalCode(reply: Reply): string | undefined {
  return reply.ok ? undefined : reply.error.code;
}

describe("command server", () => {
  let mesh: CommandMesh;
  let client: NatsConnection;
  const DEDUPE_WINDOW_MS = 300;
  before(async () => {
    // max_payload above 1 MiB, so a body over the command limit reaches the server's own check.
    mesh = await startCommandMesh({ server: { config: "max_payload: 2097152" }, duplicateWindowMs: DEDUPE_WINDOW_MS });
    client = await connect({ servers: mesh.server.url, inboxPrefix: inboxPrefix(OPERATOR), name: "test-operator" });
  });
  after(async () => {
    await client?.close();
    await mesh?.stop();
  });

  /** Sends a raw body and returns the reply, asserting the records did not move when refused. */
  async function refused(verb: string, body: string | Uint8Array): Promise<string | undefined> {
    const before = await mesh.lastSequence();
    const reply = (await client.request(commandSubject(OPERATOR, verb), body, { timeout: 5_000 })).json<Reply>();
    assert.equal(reply.ok, false, JSON.stringify(reply));
    assert.equal(await mesh.lastSequence(), before, "a refusal appends nothing");
    return refusalCode(reply);
  }

  it("R1 R33 R64: enrols a node with its own nkey; the actor is the asker's inbox user; no secret is recorded or replied", async () => {
    const keys = newNodeKeyPair();
    const user = newUserKey();
    const before = await mesh.lastSequence();
    const reply = await askAs(client, OPERATOR, "node.enrol", { node: "alpha", publicKey: keys.publicKey, nkey: user.publicKey });
    assert.ok(reply.ok, JSON.stringify(reply));
    const ok = reply as Ok & { credential: { nkey: string; user: string } };
    assert.equal(ok.duplicate, false);
    assert.equal(ok.sequence, before + 1);
    assert.equal(await mesh.lastSequence(), before + 1);
    assert.equal(ok.credential.nkey, user.publicKey);
    assert.doesNotMatch(JSON.stringify(reply), /sealed|seed|password/);
    const record = credentialAt(mesh.catalogue.state.credentials, principalKey("node", "alpha"))!;
    assert.ok(secretMatches(user.seed, record), "the records hold the node's own public key (R63)");
    assert.equal(record.sealed, undefined, "and no secret of it (R64)");
    assert.equal(nodeOf(mesh.catalogue.state.nodes, "alpha")?.enrolledAt !== undefined, true);
    const history = await askAs(client, OPERATOR, "history", { kind: "node", id: "alpha" }) as Ok & { events: Array<Record<string, unknown>> };
    assert.ok(history.events.length >= 2);
    for (const event of history.events) assert.equal(event.actor, OPERATOR);
  });

  it("R3: history and credentials answer actor, command id, time and sequence, never a hash or a sealed secret", async () => {
    const enrolled = await askAs(client, OPERATOR, "node.enrol", enrolRequest("r3-node"));
    assert.ok(enrolled.ok, JSON.stringify(enrolled));
    const history = await askAs(client, OPERATOR, "history", { kind: "node", id: "r3-node" }) as Ok & { events: Array<Record<string, unknown>> };
    assert.ok(history.events.length > 0);
    for (const event of history.events) {
      for (const key of ["actor", "commandId", "at", "sequence", "type"]) assert.ok(key in event, `history event has ${key}`);
    }
    const record = credentialAt(mesh.catalogue.state.credentials, principalKey("node", "r3-node"))!;
    assert.equal(record.sealed, undefined, "R64: no secret of a node in the records");
    for (const verb of ["history", "credentials", "nodes"]) {
      const body = verb === "history" ? { kind: "node", id: "r3-node" } : {};
      const text = JSON.stringify(await askAs(client, OPERATOR, verb, body));
      assert.ok(!/"(hash|sealed|seed|password)"/.test(text), `${verb} has a hash, sealed, seed or password field`);
      assert.doesNotMatch(text, /SU[A-Z2-7]{56}/, `${verb} shows a seed`);
    }
    assert.ok(mesh.infos.every((line) => !/SU[A-Z2-7]{56}/.test(line)));
  });

  it("R40: a retried command id gets the same answer and appends nothing, also after the dedupe window", async () => {
    const keys = { publicKey: newNodeKeyPair().publicKey, nkey: newUserKey().publicKey };
    const first = await askAs(client, OPERATOR, "node.enrol", { commandId: "enrol-beta-1", node: "beta", ...keys }) as Ok & { credential: { nkey: string } };
    assert.ok(first.ok);
    const after = await mesh.lastSequence();
    const soon = await askAs(client, OPERATOR, "node.enrol", { commandId: "enrol-beta-1", node: "beta", ...keys }) as Ok & { credential: { nkey: string } };
    const started = Date.now();
    await waitFor(() => Date.now() - started > DEDUPE_WINDOW_MS * 2, { name: "the stream's dedupe window to pass", timeoutMs: 5_000 });
    const late = await askAs(client, OPERATOR, "node.enrol", { commandId: "enrol-beta-1", node: "beta", ...keys }) as Ok & { credential: { nkey: string } };
    for (const retry of [soon, late]) {
      assert.equal(retry.ok, true, JSON.stringify(retry));
      assert.equal(retry.duplicate, true);
      assert.equal(retry.sequence, first.sequence);
      assert.deepEqual(retry.credential, first.credential);
    }
    assert.equal(await mesh.lastSequence(), after, "nothing appended by the retries");
  });

  it("R53: a command id reused for another verb or other arguments is refused command-id-reused, also after the dedupe window; the same command stays a duplicate", async () => {
    const keys = { publicKey: newNodeKeyPair().publicKey, nkey: newUserKey().publicKey };
    const first = await askAs(client, OPERATOR, "node.enrol", { commandId: "reuse-1", node: "reuse-a", ...keys });
    assert.ok(first.ok, JSON.stringify(first));
    const last = await mesh.lastSequence();
    const check = async () => {
      const otherVerb = await askAs(client, OPERATOR, "node.remove", { commandId: "reuse-1", node: "reuse-a" });
      assert.equal(refusalCode(otherVerb), "command-id-reused", JSON.stringify(otherVerb));
      assert.ok(!otherVerb.ok && otherVerb.error.message.includes("node.enrol"), JSON.stringify(otherVerb));
      const otherArgs = await askAs(client, OPERATOR, "node.enrol", { commandId: "reuse-1", node: "reuse-b", ...keys });
      assert.equal(refusalCode(otherArgs), "command-id-reused", JSON.stringify(otherArgs));
      const same = await askAs(client, OPERATOR, "node.enrol", { commandId: "reuse-1", node: "reuse-a", ...keys });
      assert.ok(same.ok && same.duplicate === true, JSON.stringify(same));
      assert.equal(await mesh.lastSequence(), last, "nothing appended");
    };
    await check();
    const started = Date.now();
    await waitFor(() => Date.now() - started > DEDUPE_WINDOW_MS * 2, { name: "the stream's dedupe window to pass", timeoutMs: 5_000 });
    await check();
  });

  it("R23: a request with an unknown field is refused (invalid-request) naming the field", async () => {
    const reply = (await client.request(commandSubject(OPERATOR, "assign"), JSON.stringify({ module: "broker", node: "alpha", colour: "red" }))).json<Reply>();
    assert.equal(refusalCode(reply), "invalid-request");
    assert.equal(!reply.ok && reply.error.field, "colour");
    assert.equal(await refused("assign", JSON.stringify({ module: "broker", node: "alpha", colour: "red" })), "invalid-request");
  });

  it("a field of the wrong type is refused (invalid-request) naming the field", async () => {
    const reply = (await client.request(commandSubject(OPERATOR, "assign"), JSON.stringify({ module: 42, node: "alpha" }))).json<Reply>();
    assert.equal(!reply.ok && reply.error.field, "module");
    assert.equal(await refused("assign", JSON.stringify({ module: 42, node: "alpha" })), "invalid-request");
  });

  it("a node key that is not an X25519 public key is refused (invalid-request, publicKey)", async () => {
    const reply = (await client.request(commandSubject(OPERATOR, "node.enrol"), JSON.stringify({ node: "gamma", publicKey: "AAAA", nkey: newUserKey().publicKey }))).json<Reply>();
    assert.equal(!reply.ok && reply.error.field, "publicKey");
    assert.equal(await refused("node.enrol", JSON.stringify({ node: "gamma", publicKey: "AAAA", nkey: newUserKey().publicKey })), "invalid-request");
  });

  it("a payload that is not JSON is refused (invalid-json)", async () => {
    assert.equal(await refused("assign", "module=broker node=alpha"), "invalid-json");
    assert.equal(await refused("assign", "[1,2]"), "invalid-json");
  });

  it("R65: a request nested past MAX_JSON_DEPTH is refused at the boundary as invalid, naming the field and the limit, never answered internal: a manifest 2,000 deep is invalid-manifest, any other field invalid-request", async () => {
    const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;
    const ask = async (verb: string, body: string) => {
      const before = await mesh.lastSequence();
      const reply = (await client.request(commandSubject(OPERATOR, verb), body, { timeout: 10_000 })).json<Reply>();
      assert.equal(await mesh.lastSequence(), before, "a refusal appends nothing");
      assert.ok(!reply.ok, JSON.stringify(reply).slice(0, 300));
      return reply.error;
    };
    for (const depth of [2_000, 100_000]) {
      const manifest = await ask("module.register", `{"manifest":{"name":"deep","version":"1","x":${nested(depth)}}}`);
      assert.deepEqual([manifest.code, manifest.field], ["invalid-manifest", "manifest.x"], manifest.message);
      assert.match(manifest.message, new RegExp(`\\b${MAX_JSON_DEPTH}\\b`), "the message names the limit");
      const other = await ask("nodes", `{"limit":${nested(depth)}}`);
      assert.deepEqual([other.code, other.field], ["invalid-request", "limit"], other.message);
    }
    // At the limit, the request is the schema's to judge (here: an unknown field).
    const atLimit = await ask("module.register", `{"manifest":{"name":"deep","version":"1","x":${nested(MAX_JSON_DEPTH - 2)}}}`);
    assert.deepEqual([atLimit.code, atLimit.field], ["invalid-manifest", "manifest.x"]);
    assert.doesNotMatch(atLimit.message, /deep/);
  });

  it("a payload over 1 MiB is refused (payload-too-large)", async () => {
    const body = JSON.stringify({ manifest: { name: "big", version: "1", description: "x".repeat(MAX_COMMAND_BYTES) } });
    assert.ok(body.length > MAX_COMMAND_BYTES);
    assert.equal(await refused("module.register", body), "payload-too-large");
  });

  it("a verb that does not exist is refused (unknown-verb) naming the known verbs", async () => {
    const reply = (await client.request(commandSubject(OPERATOR, "node.frobnicate"), "{}")).json<Reply>();
    assert.equal(refusalCode(reply), "unknown-verb");
    assert.ok(!reply.ok && reply.error.message.includes("node.enrol"));
    assert.equal(await refused("node.frobnicate", "{}"), "unknown-verb");
  });

  it("a malformed command id is refused (invalid-request, commandId)", async () => {
    assert.equal(await refused("assign", JSON.stringify({ commandId: "has spaces", module: "broker", node: "alpha" })), "invalid-request");
  });

  it("R51: a request whose reply is not in its asker's own inbox is dropped: no reply there, nothing appended", async () => {
    const anonymous = await connect({ servers: mesh.server.url, name: "test-anonymous" });
    try {
      const before = await mesh.lastSequence();
      const overheard = anonymous.subscribe("_INBOX.forged.>");
      anonymous.publish(commandSubject(OPERATOR, "node.enrol"), JSON.stringify(enrolRequest("delta")), { reply: "_INBOX.forged.1" });
      await anonymous.flush();
      // Served in arrival order: once the next request is answered, the forged one was handled.
      assert.ok((await askAs(client, OPERATOR, "where", {})).ok);
      await anonymous.flush();
      assert.equal(overheard.getReceived(), 0);
      assert.equal(await mesh.lastSequence(), before);
    } finally {
      await anonymous.close();
    }
    assert.equal(replyInAskersInbox("node-alpha", `${inboxPrefix("node-alpha")}.abc.1`), true);
    assert.equal(replyInAskersInbox("operator-ann", `${inboxPrefix("node-alpha")}.abc.1`), false);
    assert.equal(replyInAskersInbox("node-alpha", `${inboxPrefix("node-alpha")}.`), false);
    assert.equal(replyInAskersInbox("node-alpha", `${inboxPrefix("node-alpha")}x.abc`), false);
    assert.equal(replyInAskersInbox("node-alpha", "_INBOX.abc.1"), false);
    assert.equal(replyInAskersInbox("node-alpha", undefined), false);
  });

  it("adapter errors map to reply codes in one function; an unexpected error says nothing of its detail", async () => {
    assert.equal(replyErrorOf(new FencedAppend(3)).code, "busy-retry");
    assert.equal(replyErrorOf(new FenceRetriesExhausted(5)).code, "busy-retry");
    assert.equal(replyErrorOf(new InvalidEvent(7)).code, "invalid-records");
    assert.equal(replyErrorOf(new ReadInterrupted(9, "the bus is away")).code, "records-unavailable");
    const internal = replyErrorOf(new Error("password=hunter2 at nats://u:p@host"));
    assert.equal(internal.code, "internal");
    assert.ok(!internal.message.includes("hunter2"));
    // Through a running server: a catalogue that fails gives a reply with the mapped code, and the
    // detail of an unexpected error reaches the log only.
    const server = await startNatsServer();
    const nc = await connect({ servers: server.url, inboxPrefix: inboxPrefix(OPERATOR) });
    const logged: string[] = [];
    let failure: Error = new FenceRetriesExhausted(5);
    const broken = {
      state: mesh.catalogue.state,
      catchUp: async () => mesh.catalogue.state,
      transact: async () => { throw failure; },
      snapshot: async () => ({ sequence: 0, bytes: 0 }),
    } as unknown as Catalogue;
    const served = serveCommands(nc, broken, {
      sealSecret: (p) => p, openSecret: (s) => s, now: () => new Date(), newId: () => "x1",
      log: { info() {}, error: (line) => { logged.push(line); } },
    });
    try {
      const body = { module: "m", node: "alpha" };
      assert.equal(refusalCode(await askAs(nc, OPERATOR, "assign", body)), "busy-retry");
      failure = new Error("detail-only-for-the-log");
      const internalReply = await askAs(nc, OPERATOR, "assign", body);
      assert.equal(refusalCode(internalReply), "internal");
      assert.ok(!JSON.stringify(internalReply).includes("detail-only-for-the-log"));
      assert.ok(logged.some((line) => line.includes("detail-only-for-the-log")));
    } finally {
      await served.stop();
      await nc.close();
      await server.stop();
    }
  });

  it("re-registering an identical manifest answers unchanged and appends nothing; a changed one needs a new version", async () => {
    const manifest = { name: "echo", version: "1", seats: { echo: { protocol: "echo" } }, claims: ["echo"] };
    const first = await askAs(client, OPERATOR, "module.register", { manifest });
    assert.ok(first.ok && first.unchanged === undefined, JSON.stringify(first));
    const last = await mesh.lastSequence();
    assert.equal(first.sequence, last);
    const again = await askAs(client, OPERATOR, "module.register", { manifest: { claims: ["echo"], version: "1", name: "echo", seats: manifest.seats } });
    assert.ok(again.ok, JSON.stringify(again));
    assert.equal(again.unchanged, true);
    assert.equal(again.duplicate, false);
    assert.equal((again as Ok).module, "echo");
    assert.equal(await mesh.lastSequence(), last, "an unchanged registration appends nothing");
    assert.equal(refusalCode(await askAs(client, OPERATOR, "module.register", { manifest: { ...manifest, seats: { echo: { protocol: "echo2" } } } })), "version-exists");
    assert.equal(await mesh.lastSequence(), last);
    const v2 = await askAs(client, OPERATOR, "module.register", { manifest: { ...manifest, version: "2", seats: { echo: { protocol: "echo2" } } } });
    assert.ok(v2.ok, JSON.stringify(v2));
    assert.equal((v2 as Ok).replaced, "1");
    assert.equal(await mesh.lastSequence(), last + 1);
  });

  it("keeps serving after a request fails and logs no secret", async () => {
    const enrolled = await askAs(client, OPERATOR, "node.enrol", enrolRequest("served"));
    assert.ok(enrolled.ok, JSON.stringify(enrolled));
    assert.equal(await refused("node.enrol", "{not json"), "invalid-json");
    assert.equal(await refused("node.frobnicate", "{}"), "unknown-verb");
    const reply = await askAs(client, OPERATOR, "where", {});
    assert.equal(reply.ok, true);
    for (const line of [...mesh.infos, ...mesh.errors]) {
      assert.doesNotMatch(line, /SU[A-Z2-7]{56}/, "no seed in a log line (R3)");
    }
  });
});

describe("command server: a long verb's reply (R33 R50)", () => {
  let mesh: CommandMesh;
  let asker: NatsConnection;
  let release: () => void;
  beforeEach(async () => {
    const gate = new Promise<void>((resolve) => { release = resolve; });
    // A verb that answers only when the test says: a push waiting on its nodes' reports.
    mesh = await startCommandMesh({ shellVerbs: { reports: async () => { await gate; return { ok: true, reports: [] } as Reply; } } });
    asker = await connect({ servers: mesh.server.url, inboxPrefix: inboxPrefix(OPERATOR), name: "test-operator" });
  });
  afterEach(async () => {
    release();
    await asker?.close();
    await mesh?.stop();
  });

  it("R33 R50: a reply ready while nothing heard the asker's inbox (its connection dropped by the push's own reload) reaches it once it subscribes again", async () => {
    const inbox = `${inboxPrefix(OPERATOR)}.away`;
    const before = asker.subscribe(inbox, { max: 1 });
    asker.publish(commandSubject(OPERATOR, "reports"), "{}", { reply: inbox });
    await asker.flush();
    // The asker is away: nothing subscribes its reply subject when the reply is ready.
    before.unsubscribe();
    await asker.flush();
    release();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const back = asker.subscribe(inbox, { max: 1 });
    const heard = await Promise.race([
      (async () => { for await (const m of back) return m.json<Reply>(); return undefined; })(),
      new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 10_000)),
    ]);
    assert.equal(heard?.ok, true, "the reply was sent again until the asker heard it");
    await waitFor(() => mesh.infos.some((line) => line.startsWith(`command reports by ${OPERATOR}: ok`)), { name: "the verb's log line" });
    assert.ok(mesh.infos.some((line) => line === `command reports by ${OPERATOR}: ok`), mesh.infos.join("\n"));
  });

  it("R33: a reply nobody hears is given up when the server stops, and the log says so", async () => {
    const inbox = `${inboxPrefix(OPERATOR)}.gone`;
    asker.publish(commandSubject(OPERATOR, "reports"), "{}", { reply: inbox });
    await asker.flush();
    release();
    await mesh.commands.stop();
    assert.ok(mesh.infos.some((line) => line.startsWith(`command reports by ${OPERATOR}: ok`) && line.includes("unheard when the server stopped")), mesh.infos.join("\n"));
  });
});
