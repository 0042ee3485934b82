/**
 * R68: a host is evidence a whole-folder restore of the controller's machine cannot bring back. The
 * restore restarts the bus under a running host agent and puts back an older REPORTS stream (the
 * bus's store is in the folder); the agent, still holding the declaration it applied, says so again
 * when it reconnects, records sequence and tag included, so the controller hears it.
 */
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { AckPolicy, jetstream, jetstreamManager, RetentionPolicy, StorageType } from "@nats-io/jetstream";
import { startNatsServer, waitFor, type NatsServer } from "../support/natsServer.ts";
import { CONTROL_STREAM, CONTROL_SUBJECTS, REPORTS_STREAM, busUser, declarationConsumer, declarationFilter, declarationSubject, reportSubject } from "../../src/names.ts";
import { newUserKey } from "../../src/crypto/secrets.ts";
import { canonicalJson } from "../../src/compose/index.ts";
import type { DeclarationBody } from "../../src/contracts/declaration.ts";
import type { HostReport } from "../../src/contracts/report.ts";
import { reportsStreamSpec } from "../../src/controller/planRaise.ts";
import { initHostKeys, startHost, type Host } from "../../src/host/index.ts";

describe("R68: a running host says again what it applied when the bus comes back restored", () => {
  let server: NatsServer;
  let serverDir: string;
  let root: string;
  let admin: NatsConnection;
  let host: Host | undefined;

  before(async () => {
    serverDir = mkdtempSync(join(tmpdir(), "mesh-nats-restate-"));
    root = mkdtempSync(join(tmpdir(), "mesh-host-restate-"));
    server = await startNatsServer({ dir: serverDir });
    admin = await connect({ servers: server.url });
  });
  after(async () => {
    await host?.stop();
    await admin?.close();
    await server?.stop();
    rmSync(serverDir, { recursive: true, force: true });
    rmSync(root, { recursive: true, force: true });
  });

  it("R68: after the bus's folder is put back from a backup older than the host's declaration and the bus restarted, the host reports that declaration's records sequence and tag again, without being sent anything", async () => {
    const jsm = await jetstreamManager(admin);
    await jsm.streams.add({ name: CONTROL_STREAM, subjects: [CONTROL_SUBJECTS], max_msgs_per_subject: 1, retention: RetentionPolicy.Limits, storage: StorageType.File });
    await jsm.streams.add({ ...reportsStreamSpec(1), retention: RetentionPolicy.Limits, storage: StorageType.File });
    await jsm.consumers.add(CONTROL_STREAM, { durable_name: declarationConsumer("alpha"), filter_subject: declarationFilter("alpha"), ack_policy: AckPolicy.Explicit });

    // The backup: the bus's folder before alpha was sent anything.
    const backup = join(root, "backup");
    await admin.close();
    await server.stop();
    cpSync(serverDir, backup, { recursive: true });
    server = await startNatsServer({ dir: serverDir, port: server.port });
    admin = await connect({ servers: server.url });

    const stateDir = join(root, "alpha");
    initHostKeys(stateDir);
    const lines: string[] = [];
    host = startHost({
      stateDir, node: "alpha", credential: { address: server.url, user: busUser("node", "alpha"), seed: newUserKey().seed },
      log: (line) => lines.push(line), backoff: { initialMs: 50, maxMs: 400 },
    });
    // An empty declaration (R29), composed from records sequence 41 and tagged by the controller.
    const body: DeclarationBody = { v: 1, node: "alpha", modules: [], provisions: [] };
    const digest = createHash("sha256").update(canonicalJson(body)).digest("hex");
    const tag = "T".repeat(43);
    await jetstream(admin).publish(declarationSubject("alpha"), JSON.stringify({ ...body, digest, recordsSequence: 41, recordsTag: tag }));
    assert.equal((await host.waitForReport(digest)).ok, true);

    // The restore: the bus stopped, its folder put back, started again; the host keeps running.
    await admin.close();
    await server.stop();
    rmSync(serverDir, { recursive: true, force: true });
    cpSync(backup, serverDir, { recursive: true });
    server = await startNatsServer({ dir: serverDir, port: server.port });
    admin = await connect({ servers: server.url });
    const restored = await jetstreamManager(admin);
    assert.equal((await restored.streams.info(REPORTS_STREAM)).state.messages, 0, "the restored REPORTS stream holds no report of alpha");

    const report = await waitFor(async () => {
      const last = await restored.streams.getMessage(REPORTS_STREAM, { last_by_subj: reportSubject("alpha") }).catch(() => null);
      return last?.json<HostReport>();
    }, { timeoutMs: 20_000, name: "alpha's report in the restored REPORTS stream" });
    assert.deepEqual([report.digest, report.recordsSequence, report.recordsTag], [digest, 41, tag]);
  });
});
