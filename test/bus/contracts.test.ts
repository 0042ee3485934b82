import { newUserKey } from "../../src/crypto/secrets.ts";
/**
 * The verbs' contract over a real bus (issue 12, src/contracts/verbs.ts): a running controller
 * stamps every reply with the version it speaks and refuses a request of another version on every
 * verb, the ones its shell serves (push, reports, replay) included; the typed client parses what
 * it answers, `replay`'s report among them (the one verb the unit tests cannot answer without the
 * records).
 */
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { startNatsServer, type NatsServer } from "../support/natsServer.ts";
import { controllerFixture, type ControllerFixture } from "../support/controller.ts";
import { meshClient, type MeshClient } from "../../src/client/client.ts";
import { sendCommand } from "../../src/client/send.ts";
import { VERBS, VERBS_VERSION, type Verb } from "../../src/contracts/verbs.ts";

/** alpha's nkey public key, as its host generated it (R64). */
const ALPHA_NKEY = newUserKey().publicKey;

describe("the verbs' contract on the bus", () => {
  let server: NatsServer;
  let fixture: ControllerFixture;
  let client: MeshClient;

  before(async () => {
    server = await startNatsServer();
    fixture = await controllerFixture(server);
    await fixture.start();
    client = meshClient(fixture.operator, "operator-test", { timeoutMs: 20_000 });
  });
  after(async () => {
    await fixture?.close();
    await server?.stop();
  });

  it("a request of another version is refused on every verb, before its fields are read (unsupported-version, field v)", async () => {
    for (const verb of Object.keys(VERBS) as Verb[]) {
      const reply = await sendCommand(fixture.operator, "operator-test", verb, { v: VERBS_VERSION + 1, no: "such field" }, { timeoutMs: 20_000 });
      assert.equal(reply.ok, false, verb);
      assert.ok(!reply.ok);
      assert.equal(reply.error.code, "unsupported-version", `${verb}: ${reply.error.message}`);
      assert.equal(reply.error.field, "v", verb);
      assert.equal(reply.v, VERBS_VERSION, `${verb}: a refusal says the version the controller speaks`);
    }
  });

  it("every reply carries the controller's version and parses with its verb's contract through the typed client", async () => {
    const enrolled = await client.nodeEnrol({ node: "alpha", publicKey: "MCowBQYDK2VuAyEAMp1bbDgAW2GGM+gtGSuYsstZQ6UtQwqGCOy9UI5MK1w=", nkey: ALPHA_NKEY });
    assert.ok(enrolled.ok, JSON.stringify(enrolled));
    assert.equal(enrolled.v, VERBS_VERSION);
    const answers = [
      await client.nodes(), await client.where(), await client.seats(), await client.modules(), await client.credentials(),
      await client.history({ kind: "node", id: "alpha" }), await client.explain({ kind: "node", name: "alpha" }),
      await client.reports(), await client.push({ dryRun: true }), await client.replay(),
    ];
    for (const answer of answers) {
      assert.ok(answer.ok, JSON.stringify(answer));
      assert.equal(answer.v, VERBS_VERSION);
    }
    const nodes = await client.everyPage("nodes", { limit: 1 });
    assert.ok(nodes.ok);
    assert.deepEqual(nodes.nodes.map((n) => n.name), ["alpha"]);
    const refused = await client.nodeEnrol({ node: "alpha", publicKey: "MCowBQYDK2VuAyEAMp1bbDgAW2GGM+gtGSuYsstZQ6UtQwqGCOy9UI5MK1w=", nkey: ALPHA_NKEY });
    assert.ok(!refused.ok);
    assert.equal(refused.error.code, "node-exists");
    const dry = await client.dryRun("node.remove", { node: "alpha" });
    assert.ok(dry.ok);
    assert.equal(dry.dryRun, true);
  });
});
