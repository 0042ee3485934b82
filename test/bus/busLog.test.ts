import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import type { NatsConnection } from "@nats-io/transport-node";
import { waitFor } from "../support/natsServer.ts";
import { connectToBus } from "../../src/bus/connect.ts";
import { makeBusCertificate } from "../../installer/tls.ts";
import { startBus, type BusProcess } from "../../installer/bus.ts";
import { SERVER_CONFIG_FILE, USER_LIST_FILE, busLogFile, findNatsServer, freePort, renderServerConfig, testServerConfig } from "../../installer/serverConfig.ts";
import { busLogFiles, rotatedLogs, watchBusLog, type BusLogWatch } from "../../src/host/busLog.ts";

/**
 * R70 (issue 25 fault 5): a principal with no grants floods the bus with denied publishes; each
 * one is a line of the bus's log, and the log shares the JetStream store's disk. The bus runs the
 * configuration genesis writes (its log file rotated at a size, here a small one so the test
 * rotates it often), and the rotated files are pruned the way the agent on the bus's machine does
 * (watchBusLog on the file its configuration names): the folder stays bounded in count and size.
 */

/** The test's rotation size, far under the real one (BUS_LOG_SIZE_LIMIT) so that a flood rotates many times. */
const LIMIT = 64 * 1024;
/** Rotated files kept in the test. */
const KEPT = 2;
/** A log line is far shorter than this: a file may pass the limit by the line that crossed it. */
const LINE_SLACK = 1024;
const DENIED = 20_000;

describe("the bus's log under a flood of denied publishes (R70)", () => {
  let root: string;
  let bus: BusProcess | undefined;
  let pruner: BusLogWatch | undefined;
  let nc: NatsConnection | undefined;
  let logFile: string;
  const said: string[] = [];

  before(async () => {
    root = mkdtempSync(join(tmpdir(), "mesh-buslog-"));
    mkdirSync(join(root, "logs"));
    mkdirSync(join(root, "store"));
    const tls = await makeBusCertificate(root, []);
    // A principal with no grants at all: every publish it makes is denied and logged.
    writeFileSync(join(root, USER_LIST_FILE), `authorization { users: [ { user: "nobody", password: "flood-test", permissions: { publish: { deny: [">"] }, subscribe: { deny: [">"] } } } ] }\n`);
    const port = await freePort();
    logFile = busLogFile(root);
    const configFile = join(root, SERVER_CONFIG_FILE);
    writeFileSync(configFile, renderServerConfig({
      listenHost: "127.0.0.1", port, monitorPort: 0, certFile: tls.certFile, keyFile: tls.keyFile, storeDir: join(root, "store"),
      userListFile: USER_LIST_FILE, logFile, logSizeLimit: LIMIT,
    }));
    const binary = findNatsServer();
    testServerConfig(binary, configFile);
    bus = await startBus({ binary, configFile, logFile, host: "127.0.0.1", port, fingerprint: tls.fingerprint, detached: false });
    // What the agent on the bus's machine does: the log file its configuration names, pruned at each rotation.
    assert.deepEqual(busLogFiles([configFile]), [logFile]);
    pruner = watchBusLog(logFile, (line) => said.push(line), KEPT);
    nc = await connectToBus({ address: `tls://127.0.0.1:${port}`, user: "nobody", password: "flood-test", fingerprint: tls.fingerprint }, { name: "flood" });
  });
  after(async () => {
    await nc?.close().catch(() => undefined);
    pruner?.stop();
    await bus?.stop();
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it("R70: 20,000 denied publishes rotate the bus's log, and the folder keeps the live log and at most the kept rotated files, each about the limit", async () => {
    for (let i = 0; i < DENIED; i += 1) nc!.publish(`mesh.command.somebody-else.push.${i % 100}`, "x");
    await nc!.flush();
    const folder = dirname(logFile);
    const rotated = () => rotatedLogs(basename(logFile), readdirSync(folder));
    // The server logs the last denials just after the flush: wait until it has rotated and the pruner caught up.
    await waitFor(() => readFileSync(logFile, "utf8").includes("Rotated log") && rotated().length <= KEPT, { timeoutMs: 15_000, name: "the log rotated and pruned" });
    const files = [logFile, ...rotated().map((name) => join(folder, name))];
    const sizes = files.map((file) => statSync(file).size);
    assert.ok(rotated().length <= KEPT, `rotated files: ${rotated().join(", ")}`);
    for (const [i, size] of sizes.entries()) assert.ok(size <= LIMIT + LINE_SLACK, `${files[i]} holds ${size} bytes`);
    const total = sizes.reduce((a, b) => a + b, 0);
    assert.ok(total <= (KEPT + 1) * (LIMIT + LINE_SLACK), `the bus's logs hold ${total} bytes`);
    // The flood was logged (it is what rotated the log), far past what is kept.
    assert.match(files.map((file) => readFileSync(file, "utf8")).join(""), /Publish Violation - User "nobody"/);
    assert.deepEqual(said, [], "the pruner said nothing: no line per rotation in the agent's own log");
  });
});
