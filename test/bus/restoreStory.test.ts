/**
 * Issue 10, story 1 end to end, with real processes: `mesh up` (the bus, the controller and the
 * vm node's host agent as background processes) and a second host agent (`mesh host`, node old1)
 * as a child process; every step through the `mesh` CLI as an operator types it.
 *
 * Backup (the bus's store, the bus stopped), rotate vm, remove old1, enrol late, push; put the
 * backup back: the controller refuses records-behind; `mesh replay --accept-restore` names the late
 * node and old1, removed after the backup, without handing old1 a credential (the broker's host
 * reports the users of the list it installed when it starts); push: old1's,
 * vm's and the controller's pre-restore passwords are refused by the bus, and so is the late node's.
 */
import { secretOf } from "../../src/bus/connect.ts";
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
import { VERBS_VERSION } from "../../src/contracts/verbs.ts";

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

  it("R43 R44 R50 R64: backup, rotate vm, remove old1, enrol late, push; restore: mesh up refuses records-behind in one line, mesh replay --accept-restore names late and old1 (old1 revoked, vm kept on the key the bus ran), push: old1's, vm's rotated-away, late's, the controller's and the operator's pre-restore keys are refused by the bus", async () => {
    const port = await freePort();
    ok("up", "--dir", dir, "--address", `tls://127.0.0.1:${port}`, "--node", "vm");

    // old1: a second node with its own host agent, a real process.
    const old1Dir = join(root, "old1");
    const [old1Key, old1Nkey] = ok("host", "init", "--state", old1Dir).trim().split("\n") as [string, string];
    writeFileSync(join(root, "old1-enrol.json"), ok("node", "enrol", "old1", "--key", old1Key, "--nkey", old1Nkey, "--json"));
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
    // vm's host makes its new key pair; the operator records its public key (R64).
    ok("credential", "rotate", "node", "vm", "--nkey", ok("host", "rotate-key", "--state", join(dir, "host")).trim());
    ok("node", "remove", "old1");
    const lateDir = join(root, "late");
    const [lateKey, lateNkey] = ok("host", "init", "--state", lateDir).trim().split("\n") as [string, string];
    writeFileSync(join(root, "late-enrol.json"), ok("node", "enrol", "late", "--key", lateKey, "--nkey", lateNkey, "--json"));
    ok("host", "credential", "--state", lateDir, "--from", join(root, "late-enrol.json"));
    const late = credentialAt(join(lateDir, "credential.json"));
    mesh("push", "--wait"); // late has no agent: its report never comes
    await waitFor(async () => (await refused(vmBefore)) && (await refused(old1Password)), { timeoutMs: 20_000, name: "vm's old and old1's passwords refused" });
    await waitFor(async () => !(await refused(late)), { timeoutMs: 20_000, name: "late admitted" });
    const vmRotated = credentialAt(join(dir, "host", "credential.json"));

    // The restore: the backup put back with the bus stopped.
    ok("down", "--dir", dir);
    rmSync(join(dir, "store"), { recursive: true, force: true });
    cpSync(join(root, "backup-store"), join(dir, "store"), { recursive: true });
    const resumed = mesh("up", "--dir", dir);
    assert.equal(resumed.status, 1, `mesh up does not resume silently: a refusal by the controller exits 1: ${resumed.err}`);
    assert.match(resumed.err, /records-behind/);
    assert.doesNotMatch(resumed.err, /`mesh nodes`/, "names no verb the person never ran");
    assert.match(resumed.err, /the bus, the controller and the host agent are still running/);
    assert.doesNotMatch(resumed.err, /unexpected error/);
    assert.equal(resumed.err.split("\n").filter((line) => line.startsWith("mesh:")).length, 1, `one line explains it: ${resumed.err}`);
    // The controller answers with its refusal: status says so and carries its code, not "did not answer".
    const status = mesh("status", "--dir", dir, "--json");
    assert.equal(status.status, 1, `mesh status over records behind: ${status.err}${status.out}`);
    const statusJson = JSON.parse(status.out) as { v?: number; error: { code: string; message: string } };
    assert.equal(statusJson.v, VERBS_VERSION, "v, as every --json object of status (found by a new-user trial)");
    const statusError = statusJson.error;
    assert.equal(statusError.code, "records-behind");
    assert.doesNotMatch(statusError.message, /did not answer/);
    assert.doesNotMatch(statusError.message, /`mesh nodes`/, "names no verb the person never ran");
    const controllerBefore = credentialAt(join(dir, "controller.json"));
    const operatorBefore = credentialAt(join(dir, "operator.json"));

    const report = JSON.parse(ok("replay", "--json")) as { behind?: Array<{ kind: string }>; changed: boolean };
    assert.ok((report.behind ?? []).length > 0, "mesh replay names the evidence");
    assert.equal(report.changed, false);
    const accepted = JSON.parse(ok("replay", "--accept-restore", "--json")) as {
      unknownToRecords: string[]; rotated: Array<{ kind: string; name: string }>;
      absentFromInstalledList?: Array<{ kind: string; name: string }>; revoked?: Array<{ kind: string; name: string }>;
    };
    // old1, removed after the backup, is back in the records but not on the list the bus runs:
    // named, and its key (the node's own: nobody can mint it another, R64) revoked.
    assert.deepEqual((accepted.absentFromInstalledList ?? []).map((p) => `${p.kind} ${p.name}`), ["node old1"], "the node removed after the backup is named");
    assert.deepEqual((accepted.revoked ?? []).map((p) => `${p.kind} ${p.name}`), ["node old1"], "its key is revoked");
    // The broker's host (started by mesh up, records behind or not) reported the list it installed.
    assert.deepEqual(accepted.unknownToRecords, ["node-late"], "the node enrolled after the backup is named");
    assert.ok(accepted.rotated.some((p) => p.kind === "node" && p.name === "vm"));
    assert.ok(accepted.rotated.some((p) => p.kind === "controller" && p.name === "mesh-controller"), "the controller's own credential too (R50)");
    assert.ok(accepted.rotated.some((p) => p.kind === "operator"), "and the asking operator's (its CLI keeps the fresh one beside its file)");
    const pushed = mesh("push", "--wait", "--json"); // old1's agent holds a refused password: it cannot report
    const pushReport = JSON.parse(pushed.out) as { controllerRotation?: string; nodes: Array<{ node: string; outcome: string; refusal?: { code: string } }> };
    assert.equal(pushReport.controllerRotation, "applied", pushed.err);
    // R12: old1 has no credential: it is neither sealed fresh secrets nor waited for (it could never report).
    const old1Line = pushReport.nodes.find((line) => line.node === "old1");
    assert.deepEqual([old1Line?.outcome, old1Line?.refusal?.code], ["refused", "no-credential"], JSON.stringify(old1Line));

    const vmNow = credentialAt(join(dir, "host", "credential.json"));
    assert.equal(secretOf(vmNow), secretOf(vmRotated), "R64: vm keeps the key it generated, the one the bus ran before the restore");
    await waitFor(async () => !(await refused(vmNow)), { timeoutMs: 20_000, name: "vm's key admitted" });
    assert.equal(await refused(old1Password), true, "old1's password (from the backup) is refused");
    assert.equal(await refused(credentialAt(join(old1Dir, "credential.json"))), true, "and so is whatever old1's agent holds now");
    assert.equal(await refused(vmBefore), true, "vm's rotated-away password is refused");
    assert.equal(await refused(late), true, "the late node is not on the bus");
    const controllerNow = credentialAt(join(dir, "controller.json"));
    assert.notEqual(secretOf(controllerNow), secretOf(controllerBefore), "the controller's credential file holds its fresh password");
    assert.equal(await refused(controllerBefore), true, "the controller's pre-restore password is refused (R50 switched it)");
    assert.equal(await refused(controllerNow), false);
    assert.equal(await refused(operatorBefore), true, "the operator's pre-restore password is refused");
    ok("nodes"); // and the operator still commands: its CLI switched to the fresh one
    assert.notEqual(secretOf(credentialAt(join(dir, "operator.json"))), secretOf(operatorBefore));
  });
});
