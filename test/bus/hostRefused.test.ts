import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startNatsServer, type NatsServer } from "../support/natsServer.ts";
import { renderUserList } from "../../src/compose/index.ts";
import { hashPassword, newPassword } from "../../src/crypto/secrets.ts";
import { initHostKeys } from "../../src/host/index.ts";
import { runCli } from "../../src/cli/run.ts";
import { EXIT_REFUSED, type CliIo } from "../../src/cli/context.ts";

describe("a host agent the bus refuses", () => {
  let root: string;
  let server: NatsServer;
  before(async () => {
    root = mkdtempSync(join(tmpdir(), "mesh-host-refused-"));
    // The bus knows someone else only: this node is not (or no longer) on its list.
    const users = renderUserList({ users: [{ user: "other", password: hashPassword(newPassword()), permissions: { publish: { allow: [">"] }, subscribe: { allow: [">"] } }, principal: { kind: "operator", name: "other" } }] });
    server = await startNatsServer({ files: { "users.conf": users }, config: `include "users.conf"` });
  });
  after(async () => {
    await server?.stop();
    rmSync(root, { recursive: true, force: true });
  });

  it("R50: `mesh host --once` refused by the bus exits non-zero and says what to do (stop it if removed; `mesh host credential --from` if rotated)", { timeout: 60_000 }, async () => {
    const state = join(root, "ghost");
    initHostKeys(state);
    const credential = join(state, "credential.json");
    writeFileSync(credential, JSON.stringify({ address: server.url, user: "node-ghost", password: newPassword() }));
    let err = "";
    const io: CliIo = { stdout: { write: () => undefined }, stderr: { write: (s: string) => { err += s; } }, env: {} };
    const code = await runCli(["host", "--state", state, "--node", "ghost", "--once"], io);
    assert.equal(code, EXIT_REFUSED);
    assert.match(err, /mesh host credential --state/);
    assert.match(err, /stop this agent/);
  });
});
