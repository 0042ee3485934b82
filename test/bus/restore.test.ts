/**
 * Issue 10: records that defend themselves (R43..R47), against a real nats-server and a real
 * controller (test/support/controller.ts). One server per describe: CATALOGUE is a fixed name.
 */
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { jetstreamManager } from "@nats-io/jetstream";
import { startNatsServer, type NatsServer } from "../support/natsServer.ts";
import { controllerFixture, type ControllerFixture } from "../support/controller.ts";
import { RecordsUnsafe } from "../../src/events/catalogue.ts";
import { CATALOGUE_STREAM } from "../../src/names.ts";

describe("R47: the controller refuses to serve on records that erase commits", () => {
  let server: NatsServer;
  let fixture: ControllerFixture;
  before(async () => {
    server = await startNatsServer();
    fixture = await controllerFixture(server);
  });
  after(async () => {
    await fixture?.close();
    await server?.stop();
  });

  it("R47: max_msgs: 5 set by hand on CATALOGUE stops the start, naming max_msgs; nothing is lifted silently", async () => {
    const first = await fixture.start();
    await fixture.enrol("alpha");
    await first.stop();
    const jsm = await jetstreamManager(fixture.operator);
    const config = (await jsm.streams.info(CATALOGUE_STREAM)).config;
    await jsm.streams.update(CATALOGUE_STREAM, { ...config, max_msgs: 5 });
    await assert.rejects(fixture.start(), (error: unknown) => error instanceof RecordsUnsafe && error.setting === "max_msgs");
    assert.equal((await jsm.streams.info(CATALOGUE_STREAM)).config.max_msgs, 5, "the controller did not change the setting behind the operator's back");
  });
});
