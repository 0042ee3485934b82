/**
 * Issue 25, fault 4 (R68): a whole-folder restore of the genesis host (a disk or VM snapshot)
 * brings back the records, the bus's store and the controller's mark together, so nothing on that
 * machine tells the records went back. What survives is on other machines: an operator's CLI there
 * has seen the records' sequence (the controller vouched for it in its replies) and says so with
 * every command.
 */
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startNatsServer, type NatsServer } from "../support/natsServer.ts";
import { controllerFixture, freshControllerSuite, type ControllerFixture } from "../support/controller.ts";
import { sendCommand } from "../../src/client/send.ts";
import { VERBS_VERSION, type AnyReply } from "../../src/contracts/verbs.ts";
import { recordsTag, seenTag, seenTagVerifies } from "../../src/crypto/secrets.ts";
import { runMesh } from "../support/cli.ts";
import { enrolRequest } from "../support/enrol.ts";

describe("R68 R43 R44: a whole-folder restore of the controller's machine", () => {
  let server: NatsServer;
  let fixture: ControllerFixture;
  let serverDir: string;
  let elsewhere: string;

  before(async () => {
    serverDir = mkdtempSync(join(tmpdir(), "mesh-nats-restore-"));
    elsewhere = mkdtempSync(join(tmpdir(), "mesh-operator-elsewhere-"));
    server = await startNatsServer({ dir: serverDir });
    fixture = await controllerFixture(server);
  });
  after(async () => {
    await fixture?.close();
    await server?.stop();
    rmSync(serverDir, { recursive: true, force: true });
    rmSync(elsewhere, { recursive: true, force: true });
  });

  it("R68: an operator's CLI on another machine names a records sequence past the restored records' end: every command answers records-behind naming the operator and the sequence, mesh replay names it, --accept-restore accepts up to it", async () => {
    // An operator on another machine: its credential (and what its CLI keeps beside it) lives there.
    const credential = join(elsewhere, "operator.json");
    writeFileSync(credential, JSON.stringify({ address: server.url, user: "operator-test", password: "unused" }));
    const mesh = (...argv: string[]) => runMesh(argv, { MESH_CREDENTIAL: credential });

    let controller = await fixture.start();
    await fixture.enrol("alpha");
    assert.equal((await mesh("nodes")).code, 0);

    // The backup: the whole folder (the bus's store, the controller's state with its mark), everything stopped.
    const backup = mkdtempSync(join(tmpdir(), "mesh-backup-"));
    try {
      await controller.stop();
      await server.stop();
      cpSync(serverDir, join(backup, "bus"), { recursive: true });
      cpSync(fixture.dir, join(backup, "state"), { recursive: true });
      server = await startNatsServer({ dir: serverDir, port: server.port });
      controller = await fixture.start();

      // After the backup: the operator works on (enrols two nodes), and its CLI sees the records grow.
      for (const node of ["beta", "gamma"]) {
        const keys = enrolRequest(node);
        const enrolled = await mesh("node", "enrol", node, "--key", keys.publicKey, "--nkey", keys.nkey, "--json");
        assert.equal(enrolled.code, 0, enrolled.err);
      }
      const seen = Number((await mesh("nodes", "--json")).json().asOf);

      // The restore: the whole folder put back, everything stopped; then started as `mesh up` would.
      await controller.stop();
      await server.stop();
      rmSync(serverDir, { recursive: true, force: true });
      cpSync(join(backup, "bus"), serverDir, { recursive: true });
      rmSync(fixture.dir, { recursive: true, force: true });
      cpSync(join(backup, "state"), fixture.dir, { recursive: true });
      server = await startNatsServer({ dir: serverDir, port: server.port });
      controller = await fixture.start();
      assert.equal(controller.catalogue.behind, null, "nothing on the restored machine tells: the mark came back with the records");

      const nodes = await mesh("nodes", "--json");
      assert.equal(nodes.code, 1, `the operator's command is refused: ${nodes.out}${nodes.err}`);
      const refusal = nodes.json().error as { code: string; message: string };
      assert.equal(refusal.code, "records-behind");
      assert.match(refusal.message, /operator-test/, "names the operator whose command is the evidence");
      assert.match(refusal.message, new RegExp(`\\b${seen}\\b`), "and the sequence it saw");
      assert.match(refusal.message, /mesh replay/);

      const report = await mesh("replay", "--json");
      assert.equal(report.code, 0, report.err);
      assert.deepEqual(((report.json().behind ?? []) as Array<{ kind: string }>).map((e) => e.kind), ["operator-seen-ahead"]);
      const accepted = await mesh("replay", "--accept-restore", "--json");
      assert.equal(accepted.code, 0, accepted.err);
      assert.equal((accepted.json().lost as { to: number }).to, seen, "the lost range reaches the sequence the operator saw");
      assert.equal((await mesh("nodes")).code, 0, "accepted: the mesh serves again");
      await controller.stop();
    } finally {
      rmSync(backup, { recursive: true, force: true });
    }
  });
});

describe("R68: an asker's seen is evidence only with the controller's tag", () => {
  const suite = freshControllerSuite();
  const ask = (verb: string, seen: unknown) => sendCommand(suite.fixture.operator, "operator-test", verb, { v: VERBS_VERSION, ...(seen === undefined ? {} : { seen }) }, { timeoutMs: 20_000 });
  const codeOf = (reply: AnyReply) => (reply.ok ? "ok" : reply.error.code);

  it("R68: a reply vouches for the folded sequence only to a request carrying seen; claims past the records' end untagged, with a tag that is not the controller's, moved to another sequence or a records tag are served and logged; a shape that is not Seen is refused on field seen; the controller's own tag past the end refuses records-behind", async () => {
    const controller = await suite.fixture.start();
    await suite.fixture.enrol("alpha");
    const last = controller.catalogue.state.sequence;

    const plain = await ask("nodes", undefined);
    assert.equal(Object.hasOwn(plain, "seen"), false, "an older CLI (no seen sent) is sent none: its strict parse holds");
    const vouched = await ask("nodes", { sequence: 0 });
    const seen = (vouched as { seen?: { sequence: number; tag: string } }).seen;
    assert.equal(seen?.sequence, last, "the reply vouches for the sequence the controller folded");
    assert.ok(seenTagVerifies(suite.fixture.meshKey, last, seen?.tag), "with the controller's tag on it");
    const pushed = await ask("reports", { sequence: 0 });
    assert.equal(codeOf(pushed), "ok", "a verb the shell serves takes seen too");
    assert.equal((pushed as { seen?: { sequence: number } }).seen?.sequence, last);

    const forged = [
      { sequence: last + 10 },
      { sequence: last + 11, tag: "A".repeat(43) },
      { sequence: last + 12, tag: seen!.tag },
      { sequence: last + 13, tag: recordsTag(suite.fixture.meshKey, { node: "alpha", digest: "d", recordsSequence: last + 13 }) },
    ];
    for (const claim of forged) assert.equal(codeOf(await ask("nodes", claim)), "ok", JSON.stringify(claim));
    assert.equal(controller.catalogue.behind, null, "no claim the controller did not vouch for is evidence");
    assert.ok(controller.lines.some((l) => l.includes(String(last + 10)) && l.includes("operator-test")), "an ignored claim is logged, naming the asker");
    const bad = await ask("nodes", { sequence: -1 });
    assert.deepEqual(bad.ok ? ["ok"] : [bad.error.code, bad.error.field], ["invalid-request", "seen"]);

    const genuine = await ask("nodes", { sequence: last + 5, tag: seenTag(suite.fixture.meshKey, last + 5) });
    assert.equal(codeOf(genuine), "records-behind");
    assert.deepEqual(evidenceKinds(controller.catalogue), ["operator-seen-ahead"]);
    await controller.stop();
  });
});

/** The kinds of evidence a catalogue holds that its records are behind (R43), none when it serves. */
function evidenceKinds(catalogue: { readonly behind: ReadonlyArray<{ kind: string }> | null }): string[] {
  return (catalogue.behind ?? []).map((e) => e.kind);
}
