import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { runCli } from "../../src/cli/run.ts";
import { EXIT_USAGE, type CliIo } from "../../src/cli/context.ts";
import { pushTimeoutMessage, PUSH_REPLY_MARGIN_MS } from "../../src/cli/push.ts";
import { commandSubject } from "../../src/names.ts";
import { newNodeKeyPair, newUserKey } from "../../src/crypto/secrets.ts";
import { startNatsServer, waitFor, type NatsServer } from "../support/natsServer.ts";

/**
 * A controller that receives a command but never answers: the CLI's timeout says the command id it
 * sent, so `--command-id <id>` makes the retry safe (the same id appends nothing twice).
 */
describe("mesh CLI when the controller does not answer", () => {
  let server: NatsServer;
  let silent: NatsConnection;
  let dir: string;
  const bodies: Array<Record<string, unknown>> = [];

  before(async () => {
    server = await startNatsServer();
    silent = await connect({ servers: server.url });
    silent.subscribe(commandSubject("operator-admin", "node.enrol"), { callback: (_e, m) => { bodies.push(m.json()); } });
    await silent.flush();
    dir = mkdtempSync(join(tmpdir(), "mesh-cli-timeout-"));
    writeFileSync(join(dir, "operator.json"), JSON.stringify({ address: server.url, user: "operator-admin", password: "x" }));
  });
  after(async () => {
    await silent?.close();
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("R33: a timed-out command names the command id it sent, for a safe retry with --command-id", async () => {
    let err = "";
    const io: CliIo = { stdout: { write: () => undefined }, stderr: { write: (s: string) => { err += s; } }, env: { MESH_CREDENTIAL: join(dir, "operator.json") } };
    assert.equal(await runCli(["node", "enrol", "n2", "--key", newNodeKeyPair().publicKey, "--nkey", newUserKey().publicKey, "--timeout", "300"], io), EXIT_USAGE);
    await waitFor(() => bodies.length === 1, { timeoutMs: 5_000, name: "the request arrived" });
    const sent = bodies[0]!.commandId;
    assert.equal(typeof sent, "string");
    assert.ok(err.includes(`--command-id ${String(sent)}`), err);
    assert.ok(err.includes("300 ms"), err);
  });

  it("R32: a push's timeout message states both waits: --timeout for the reports and the reply margin", () => {
    const message = pushTimeoutMessage(20_000);
    assert.ok(message.includes(`within ${20_000 + PUSH_REPLY_MARGIN_MS} ms`) && message.includes("--timeout 20000 ms"), message);
  });
});
