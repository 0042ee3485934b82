/**
 * Issue 10, story 1 end to end, with real processes: `mesh up` (the bus, the controller and the
 * vm node's host agent as background processes) and a second host agent (`mesh host`, node old1)
 * as a child process; every step through the `mesh` CLI as an operator types it.
 *
 * Backup (the bus's store, the bus stopped), rotate vm, remove old1, enrol late, push; put the
 * backup back: the controller refuses records-behind; `mesh replay --accept-restore`; push: old1's
 * and vm's rotated-away passwords are refused by the bus, and the late node is not on it.
 */
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "../../installer/serverConfig.ts";
import { BusConnectError, BusCredential, connectToBus } from "../../src/bus/connect.ts";
import { waitFor } from "../support/natsServer.ts";

const REPO = fileURLToPath(new URL("../../", import.meta.url));
const MAIN = join(REPO, "src/cli/main.ts");

describe("R43 R44: story 1, a restored backup, end to end with real processes", () => {
  let root: string;
  let dir: string;
  let old1: ChildProcess | undefined;
  const mesh = (...args: string[]) => {
    const run = spawnSync(process.execPath, ["--import", "tsx", MAIN, ...args], { cwd: REPO, encoding: "utf8", timeout: 240_000, env: { ...process.env, MESH_CREDENTIAL: join(dir, "operator.json") } });
    return { status: run.status, out: run.stdout, err: run.stderr };
  };
  const ok = (...args: string[]) => {
    const run = mesh(...args);
    assert.equal(run.status, 0, `mesh ${args.join(" ")}: ${run.err}${run.out}`);
    return run.out;
  };
  /** Whether the bus refuses `credential` (a fresh connection each time). */
  const refused = async (credential: BusCredential) => {
    try {
      const nc = await connectToBus(credential, { name: "story-check", timeoutMs: 3_000 });
      await nc.close();
      return false;
    } catch (error) {
      if (error instanceof BusConnectError && /authorization|user or password/i.test(error.message)) return true;
      throw error;
    }
  };
  const credentialAt = (path: string) => BusCredential.parse(JSON.parse(readFileSync(path, "utf8")));

  before(async () => {
    root = mkdtempSync(join(tmpdir(), "mesh-story-"));
    dir = join(root, ".mesh");
  });
  after(async () => {
    old1?.kill("SIGTERM");
    if (root) {
      mesh("down", "--dir", dir);
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("R43 R44: backup, rotate vm, remove old1, push; restore: records-behind, mesh replay --accept-restore, push: old1's and vm's rotated-away passwords are refused by the bus", async () => {
    const port = await freePort();
    ok("up", "--dir", dir, "--address", `tls://127.0.0.1:${port}`, "--node", "vm");

    // old1: a second node with its own host agent, a real process.
    const old1Dir = join(root, "old1");
    const old1Key = ok("host", "init", "--state", old1Dir).trim();
    writeFileSync(join(root, "old1-enrol.json"), ok("node", "enrol", "old1", "--key", old1Key, "--json"));
    ok("host", "credential", "--state", old1Dir, "--from", join(root, "old1-enrol.json"));
    old1 = spawn(process.execPath, ["--import", "tsx", MAIN, "host", "--state", old1Dir, "--node", "old1"], { cwd: REPO, stdio: "ignore" });
    ok("push", "--wait");
    const old1Password = credentialAt(join(old1Dir, "credential.json"));
    assert.equal(await refused(old1Password), false, "old1 is on the bus");

    // The backup: the bus's store, copied with the bus stopped.
    ok("down", "--dir", dir);
    cpSync(join(dir, "store"), join(root, "backup-store"), { recursive: true });
    ok("up", "--dir", dir);

    const vmBefore = credentialAt(join(dir, "host", "credential.json"));
    ok("credential", "rotate", "node", "vm");
    ok("node", "remove", "old1");
    const lateKey = ok("host", "init", "--state", join(root, "late")).trim();
    ok("node", "enrol", "late", "--key", lateKey);
    mesh("push", "--wait"); // late has no agent: its report never comes
    await waitFor(async () => (await refused(vmBefore)) && (await refused(old1Password)), { timeoutMs: 20_000, name: "vm's old and old1's passwords refused" });

    // The restore: the backup put back with the bus stopped.
    ok("down", "--dir", dir);
    rmSync(join(dir, "store"), { recursive: true, force: true });
    cpSync(join(root, "backup-store"), join(dir, "store"), { recursive: true });
    const resumed = mesh("up", "--dir", dir);
    assert.notEqual(resumed.status, 0, "mesh up does not resume silently");
    assert.match(resumed.err, /records-behind/);

    const report = JSON.parse(ok("replay", "--json")) as { behind?: Array<{ kind: string }>; changed: boolean };
    assert.ok((report.behind ?? []).length > 0, "mesh replay names the evidence");
    assert.equal(report.changed, false);
    const accepted = JSON.parse(ok("replay", "--accept-restore", "--json")) as { unknownToRecords: string[]; rotated: Array<{ kind: string; name: string }> };
    // Not asserted yet: accepted.unknownToRecords names the users of the broker's last report, but
    // the REPORTS stream was restored with the store and predates late; the broker's host reports
    // its installed list only after its next apply (see the report: a host re-report at start).
    assert.ok(Array.isArray(accepted.unknownToRecords));
    assert.ok(accepted.rotated.some((p) => p.kind === "node" && p.name === "vm"));
    mesh("push", "--wait"); // old1's agent holds a refused password: it cannot report

    const vmNow = credentialAt(join(dir, "host", "credential.json"));
    await waitFor(async () => !(await refused(vmNow)), { timeoutMs: 20_000, name: "vm's fresh credential admitted" });
    assert.equal(await refused(old1Password), true, "old1's password (from the backup) is refused");
    assert.equal(await refused(vmBefore), true, "vm's rotated-away password is refused");
    assert.equal(await refused({ ...vmNow, user: "node-late" }), true, "the late node is not on the bus");
  });
});
