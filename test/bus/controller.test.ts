import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, statSync, writeFileSync, existsSync } from "node:fs";
import { jetstreamManager } from "@nats-io/jetstream";
import { freshControllerSuite } from "../support/controller.ts";
import { busObjects } from "../support/busObjects.ts";
import { canonicalJson } from "../../src/projections/canonical.ts";
import { packState } from "../../src/projections/pack.ts";
import { credentialOf } from "../../src/projections/index.ts";
import { secretMatches } from "../../src/crypto/secrets.ts";
import { pendingCredentialFile } from "../../src/controller/credential.ts";
import {
  CONTROLLER_NAME, CONTROL_STREAM, REPORTS_STREAM, declarationConsumer, workConsumer, workStream,
} from "../../src/names.ts";
import { BOOTSTRAP_SEED, BOOTSTRAP_USER } from "../../src/genesis.ts";

const controllerPrincipal = { kind: "controller" as const, name: CONTROLLER_NAME };
const builder = {
  name: "builder", version: "1.0.0",
  seats: { "mesh-build": { protocol: "mesh-work", accepts: ["build"] } },
  claims: ["mesh-build"],
};
const broker = { name: "broker", version: "2.9.10", seats: { "mesh-broker": { protocol: "nats" } }, claims: ["mesh-broker"] };


describe("controller start: raising the bus", () => {
  const suite = freshControllerSuite();

  it("R21 R22: a stream deleted by hand is back with its consumers after a restart, records intact; asserting twice changes nothing", async () => {
    const first = await suite.fixture.start();
    await suite.fixture.enrol("alpha");
    await suite.fixture.enrol("beta");
    await suite.fixture.send("module.register", { manifest: builder });
    await first.push();
    const records = canonicalJson(packState(first.catalogue.state));
    await first.stop();

    const jsm = await jetstreamManager(suite.fixture.operator);
    await jsm.streams.delete(CONTROL_STREAM);
    await jsm.streams.delete(workStream("mesh-build"));
    await assert.rejects(jsm.streams.info(CONTROL_STREAM));

    const second = await suite.fixture.start();
    assert.deepEqual(second.raised.refused, []);
    assert.ok(second.raised.created.includes(CONTROL_STREAM));
    for (const node of ["alpha", "beta"]) {
      const info = await jsm.consumers.info(CONTROL_STREAM, declarationConsumer(node));
      assert.equal(info.config.max_deliver ?? -1, -1, "CONTROL consumers never dead-letter (R22)");
    }
    await jsm.consumers.info(workStream("mesh-build"), workConsumer("mesh-build"));
    await jsm.streams.info(REPORTS_STREAM);
    assert.equal(canonicalJson(packState(second.catalogue.state)), records, "the records are intact");
    const raisedBus = await busObjects(jsm);
    await second.stop();

    const third = await suite.fixture.start();
    assert.deepEqual(third.raised.created, []);
    assert.deepEqual(third.raised.updated, []);
    assert.equal(await busObjects(jsm), raisedBus, "a second raise changes no stream or consumer");
    await third.stop();
  });
});

describe("controller start: its own credential (R14)", () => {
  const suite = freshControllerSuite();

  it("R14: the start records the hash of the credential in use, only if none is recorded", async () => {
    const first = await suite.fixture.start();
    const recorded = credentialOf(first.catalogue.state.credentials, controllerPrincipal);
    assert.ok(recorded, "the controller's credential is recorded");
    assert.equal(recorded.user, BOOTSTRAP_USER);
    assert.ok(secretMatches(BOOTSTRAP_SEED, recorded));
    const sequence = first.catalogue.state.sequence;
    await first.stop();

    const second = await suite.fixture.start();
    assert.equal(second.catalogue.state.sequence, sequence, "a restart records nothing new");
    assert.equal(credentialOf(second.catalogue.state.credentials, controllerPrincipal)?.nkey, recorded.nkey);
    assert.ok(recorded.nkey, "an nkey credential (R63)");
    await second.stop();
  });

  it("R14: the first push with a broker rotates the bootstrap password; a restart keeps the rotated one", async () => {
    const controller = await suite.fixture.start();
    await suite.fixture.enrol("bus");
    await suite.fixture.send("module.register", { manifest: broker });
    await suite.fixture.send("module.issue", { module: "broker" });
    await suite.fixture.send("assign", { module: "broker", node: "bus" });

    // The broker's host applies the list and reports it (the host agent's job, reduced).
    const answering = (async () => {
      for (;;) {
        const found = await suite.fixture.drain("bus");
        const declaration = found.at(-1);
        if (declaration) {
          assert.match(String(declaration.userListText), /controller-mesh-controller/);
          suite.fixture.report("bus", String(declaration.digest));
          return;
        }
      }
    })();
    const report = await controller.push({ wait: true, timeoutMs: 10_000 });
    await answering;
    assert.equal(report.controllerRotation, "applied");
    const rotated = credentialOf(controller.catalogue.state.credentials, controllerPrincipal)!;
    assert.equal(secretMatches(BOOTSTRAP_SEED, rotated), false, "the records no longer hold the bootstrap password");
    const file = JSON.parse(readFileSync(suite.fixture.credentialFile, "utf8")) as { seed: string };
    assert.notEqual(file.seed, BOOTSTRAP_SEED);
    assert.ok(secretMatches(file.seed, rotated), "the credential file holds the rotated password");
    assert.equal(statSync(suite.fixture.credentialFile).mode & 0o777, 0o600);
    assert.equal(existsSync(pendingCredentialFile(suite.fixture.credentialFile)), false);
    assert.ok(controller.lines.every((line) => !line.includes(file.seed) && !line.includes(BOOTSTRAP_SEED)), "no log line holds a password (R3)");
    const sequence = controller.catalogue.state.sequence;
    await controller.stop();

    // A restart with the rotated file: nothing recorded again.
    const restarted = await suite.fixture.start();
    assert.equal(restarted.credential.password(), file.seed);
    assert.equal(restarted.catalogue.state.sequence, sequence);
    await restarted.stop();

    // A restart from a bootstrap credential file (an old copy put back): the records' rotated
    // password wins; the bootstrap one is not recorded again.
    writeFileSync(suite.fixture.credentialFile, JSON.stringify({ address: suite.server.url, user: BOOTSTRAP_USER, seed: BOOTSTRAP_SEED }), { mode: 0o600 });
    const fromOld = await suite.fixture.start();
    assert.equal(fromOld.credential.password(), file.seed, "the rotated password is used, not the bootstrap one");
    assert.equal(fromOld.catalogue.state.sequence, sequence);
    assert.ok(secretMatches(file.seed, credentialOf(fromOld.catalogue.state.credentials, controllerPrincipal)!));
    await fromOld.stop();
  });
});
