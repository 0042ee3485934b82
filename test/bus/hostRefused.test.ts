import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connectToBus } from "../../src/bus/connect.ts";
import { makeBusCertificate } from "../../installer/tls.ts";
import { AckPolicy, jetstreamManager } from "@nats-io/jetstream";
import { startNatsServer, waitFor, type NatsServer } from "../support/natsServer.ts";
import { CONTROL_STREAM, CONTROL_SUBJECTS, declarationConsumer, declarationFilter } from "../../src/names.ts";
import { renderUserList } from "../../src/compose/index.ts";
import { newUserKey, publicKeyOfSeed } from "../../src/crypto/secrets.ts";
import { initHostKeys, startHost } from "../../src/host/index.ts";
import { runCli } from "../../src/cli/run.ts";
import { EXIT_REFUSED, type CliIo } from "../../src/cli/context.ts";

describe("a host agent the bus refuses", () => {
  let root: string;
  let server: NatsServer;
  before(async () => {
    root = mkdtempSync(join(tmpdir(), "mesh-host-refused-"));
    // The bus knows someone else only: this node is not (or no longer) on its list.
    const users = renderUserList({ users: [{ user: "other", nkey: newUserKey().publicKey, permissions: { publish: { allow: [">"] }, subscribe: { allow: [">"] } }, principal: { kind: "operator", name: "other" } }] });
    server = await startNatsServer({ files: { "users.conf": users }, config: `include "users.conf"` });
  });
  after(async () => {
    await server?.stop();
    rmSync(root, { recursive: true, force: true });
  });

  it("R50: `mesh host --once` refused by the bus exits non-zero and says what to do (stop it if removed; `mesh host rotate-key` and `mesh credential rotate node --nkey` if the mesh recorded a key it does not hold)", { timeout: 60_000 }, async () => {
    const state = join(root, "ghost");
    initHostKeys(state);
    const credential = join(state, "credential.json");
    writeFileSync(credential, JSON.stringify({ address: server.url, user: "node-ghost", seed: newUserKey().seed }));
    let err = "";
    const io: CliIo = { stdout: { write: () => undefined }, stderr: { write: (s: string) => { err += s; } }, env: {} };
    const code = await runCli(["host", "--state", state, "--node", "ghost", "--once"], io);
    assert.equal(code, EXIT_REFUSED);
    assert.match(err, /mesh host rotate-key --state/);
    assert.match(err, /stop this agent/);
  });

  it("R48 R50: a running `mesh host --once` that loses its admission (removed from the list) says it was refused and what to do, and exits non-zero", { timeout: 60_000 }, async () => {
    const all = { publish: { allow: [">"] }, subscribe: { allow: [">"] } };
    const admin = { user: "admin", seed: newUserKey().seed };
    const ghost = { user: "node-ghost", seed: newUserKey().seed };
    const list = (users: Array<{ user: string; seed: string }>) => renderUserList({
      users: users.map((u) => ({ user: u.user, nkey: publicKeyOfSeed(u.seed), permissions: all, principal: { kind: "operator" as const, name: u.user } })),
    });
    // over TLS, pinned, as on a real mesh (R34)
    const certDir = join(root, "tls");
    mkdirSync(certDir, { recursive: true });
    const { keyFile, certFile, fingerprint } = await makeBusCertificate(certDir, []);
    const bus = await startNatsServer({
      files: { "users.conf": list([admin, ghost]) },
      config: `include "users.conf"\ntls { cert_file: "${certFile}", key_file: "${keyFile}" }`,
    });
    const address = `tls://127.0.0.1:${bus.port}`;
    let cli: Promise<number> | undefined;
    try {
      // the node's own CONTROL consumer, as the controller raises it, so the agent binds and waits
      const nc = await connectToBus({ address, ...admin, fingerprint }, { reconnect: false });
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: CONTROL_STREAM, subjects: [CONTROL_SUBJECTS], max_msgs_per_subject: 1 });
      await jsm.consumers.add(CONTROL_STREAM, { durable_name: declarationConsumer("ghost"), filter_subject: declarationFilter("ghost"), ack_policy: AckPolicy.Explicit });
      await nc.close();

      const state = join(root, "removed");
      initHostKeys(state);
      writeFileSync(join(state, "credential.json"), JSON.stringify({ address, ...ghost, fingerprint }));
      let err = "";
      const io: CliIo = { stdout: { write: () => undefined }, stderr: { write: (s: string) => { err += s; } }, env: {} };
      cli = runCli(["host", "--state", state, "--node", "ghost", "--once"], io);
      await waitFor(() => err.includes("waiting for declarations"), { timeoutMs: 20_000, name: "the agent bound its consumer" });

      // `mesh node remove ghost` and a push: the list the bus reloads no longer has the node
      writeFileSync(join(bus.dir, "users.conf"), list([admin]));
      bus.reload();
      const code = await cli;
      cli = undefined;
      assert.equal(code, EXIT_REFUSED, err);
      assert.match(err, /refuses node ghost's credential/);
      assert.match(err, /mesh node remove ghost/);
      assert.match(err, /mesh host rotate-key --state/);
    } finally {
      await bus.stop();
      await cli?.catch(() => undefined);
    }
  });

  it("R1 R50 (issue 25): a removed node's agent backs off with jitter up to its ceiling, logs each refusal once saying what to do, and says 'connected' once when enrolled again", { timeout: 90_000 }, async () => {
    const all = { publish: { allow: [">"] }, subscribe: { allow: [">"] } };
    const admin = { user: "admin", seed: newUserKey().seed };
    const node = { user: "node-gone", seed: newUserKey().seed };
    const list = (users: Array<{ user: string; seed: string }>) => renderUserList({
      users: users.map((u) => ({ user: u.user, nkey: publicKeyOfSeed(u.seed), permissions: all, principal: { kind: "operator" as const, name: u.user } })),
    });
    const bus = await startNatsServer({ files: { "users.conf": list([admin, node]) }, config: `include "users.conf"` });
    const state = join(root, "gone");
    initHostKeys(state);
    const lines: string[] = [];
    const host = startHost({
      stateDir: state, node: "gone", checkIntervalMs: 0,
      credential: { address: bus.url, ...node },
      log: (line) => lines.push(line),
      backoff: { initialMs: 200, maxMs: 1_600 },
    });
    try {
      const nc = await connectToBus({ address: bus.url, ...admin }, { reconnect: false });
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: CONTROL_STREAM, subjects: [CONTROL_SUBJECTS], max_msgs_per_subject: 1 });
      await jsm.consumers.add(CONTROL_STREAM, { durable_name: declarationConsumer("gone"), filter_subject: declarationFilter("gone"), ack_policy: AckPolicy.Explicit });
      await nc.close();
      await waitFor(() => host.bound(), { timeoutMs: 20_000, name: "the agent bound its consumer" });

      // `mesh node remove gone` and a push: the bus no longer knows the node
      const removed = lines.length;
      writeFileSync(join(bus.dir, "users.conf"), list([admin]));
      bus.reload();
      const refusals = () => lines.slice(removed).filter((l) => /refuse/.test(l));
      await waitFor(() => refusals().length >= 6, { timeoutMs: 60_000, name: "six refusals logged" });
      const delays = refusals().map((l) => Number(/retrying in (\d+) ms/.exec(l)?.[1]));
      assert.ok(delays.every((d) => Number.isFinite(d) && d <= 1_600), `each refusal's line says when it dials again, never past the ceiling: ${refusals().join("\n")}`);
      assert.ok(delays[2]! > delays[0]! && delays[4]! > delays[1]!, `the delays grow: ${delays.join(", ")}`);
      assert.match(refusals()[0]!, /mesh node remove gone/, "the first refusal says what to do");
      // Each refused attempt is one line: as many as the bus's authentication errors since, not more.
      const busRefusals = bus.log().split("\n").filter((l) => /authentication error/i.test(l)).length;
      assert.ok(refusals().length <= busRefusals, `${refusals().length} lines for ${busRefusals} refusals`);

      // enrolled again: one "connected", never a "reconnected" per refused attempt
      const readmitted = lines.length;
      writeFileSync(join(bus.dir, "users.conf"), list([admin, node]));
      bus.reload();
      await waitFor(() => host.bound(), { timeoutMs: 20_000, name: "the agent bound again" });
      const after = lines.slice(readmitted);
      assert.equal(after.filter((l) => / connected to /.test(l) || /reconnected/.test(l)).length, 1, after.join("\n"));
    } finally {
      await host.stop();
      await bus.stop();
    }
  });
});
