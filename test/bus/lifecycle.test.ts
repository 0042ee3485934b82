import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { pendingCredentialFile } from "../../src/controller/credential.ts";
import { operatorConnection, HOST_DIR } from "../../src/up/up.ts";
import { connectToBus, secretOf, type BusCredential } from "../../src/bus/connect.ts";
import { readBusCredential, writeBusCredential } from "../../src/files/index.ts";
import { EXIT_OK, EXIT_REFUSED, EXIT_USAGE } from "../../src/cli/context.ts";
import { readCredentialFile, NODE_CREDENTIAL_FILE } from "../../src/host/index.ts";
import { eventSubject } from "../../src/names.ts";
import { waitFor } from "../support/natsServer.ts";
import { runMesh } from "../support/cli.ts";
import { admitted, localMesh, LOCAL_NODE as NODE } from "../support/localMesh.ts";

/**
 * Lifecycle of credentials on a whole mesh (`mesh up` in a temporary folder: the bus a child
 * process, the controller and the local host agent in this process): removing a node ends the
 * credentials delivered to it (R48), the broker cannot be lost (R49), and every rotation, the
 * controller's own included, leaves its holder on the bus (R50). Every claim is checked by dialing
 * the bus with the credential in question.
 */

const relay = { name: "relay", version: "1.0.0", seats: { relay: { protocol: "relay", emits: ["hop"] } }, claims: ["relay"] };

function credentialFile(path: string): BusCredential {
  return readBusCredential(path);
}

describe("lifecycle of credentials on a whole mesh (R48, R49, R50)", () => {
  const local = localMesh({ prefix: "mesh-lifecycle-" });
  const { logs, hosts, enrolledKeys, ask, mesh, runNode } = local;

  it("R48: removing a node ends the credential its module held: after the push the bus refuses it, and mesh explain speaks of the fresh one", async () => {
    const w2 = await runNode("w2");
    await ask("module.register", { manifest: relay });
    await ask("module.issue", { module: "relay" });
    await ask("assign", { module: "relay", node: "w2" });
    const first = await mesh("push", "--wait", "--json");
    assert.equal(first.code, EXIT_OK, `${first.out} ${first.err}`);
    const onDisk = credentialFile(join(w2, "modules", "relay", "credential.json"));
    assert.equal(await admitted(onDisk), true, "the module's credential on w2's disk is admitted before the removal (the control)");

    const removed = await mesh("node", "remove", "w2", "--json");
    assert.equal(removed.code, EXIT_OK, removed.err);
    assert.deepEqual(JSON.parse(removed.out).freshCredentials, [{ kind: "module", name: "relay" }]);
    await hosts.pop()!.stop();
    const pushed = await mesh("push", "--wait", "--json");
    assert.equal(pushed.code, EXIT_OK, `${pushed.out} ${pushed.err}`);
    assert.deepEqual(JSON.parse(pushed.out).freshCredentials, [{ kind: "module", name: "relay" }], "the push says who got a fresh credential");
    assert.equal(await admitted(onDisk), false, "the credential that was on the removed node's disk is refused");
    assert.equal(await admitted(readCredentialFile(join(w2, NODE_CREDENTIAL_FILE), w2)), false, "and so is the node's own");

    // The module moves to alpha: it runs there with its fresh credential, and explain answers for that one.
    await ask("assign", { module: "relay", node: NODE });
    const moved = await mesh("push", "--wait", "--json");
    assert.equal(moved.code, EXIT_OK, `${moved.out} ${moved.err}`);
    const fresh = credentialFile(join(local.dir, HOST_DIR, "modules", "relay", "credential.json"));
    assert.notEqual(secretOf(fresh), secretOf(onDisk));
    const nc = await connectToBus(fresh, { reconnect: false });
    try {
      nc.publish(eventSubject("relay", "hop"), "hop");
      await nc.flush();
    } finally {
      await nc.close();
    }
    const explained = await mesh("explain", "module", "relay", "pub", eventSubject("relay", "hop"), "--json");
    assert.equal(explained.code, EXIT_OK, explained.err);
    const answer = JSON.parse(explained.out) as { allowed: boolean; credentialSince?: string };
    assert.equal(answer.allowed, true);
    assert.ok(answer.credentialSince, "explain names the credential it speaks of: the fresh one, minted at the removal");
  });

  it("R66: a removed node's keys are refused at enrolment under a new name (key-retired, naming when and `mesh host init --force`), and after the next push its seed still cannot connect", async () => {
    const w3 = await runNode("w3");
    const first = await mesh("push", "--wait", "--json");
    assert.equal(first.code, EXIT_OK, `${first.out} ${first.err}`);
    const seed = readCredentialFile(join(w3, NODE_CREDENTIAL_FILE), w3);
    assert.equal(await admitted(seed), true, "w3's own credential is admitted before the removal (the control)");
    const removed = await mesh("node", "remove", "w3", "--json");
    assert.equal(removed.code, EXIT_OK, removed.err);
    await hosts.pop()!.stop();
    const pushed = await mesh("push", "--wait", "--json");
    assert.equal(pushed.code, EXIT_OK, `${pushed.out} ${pushed.err}`);
    assert.equal(await admitted(seed), false, "the removed node's seed is refused after the push");

    // The cleaned machine kept its keys (`mesh host init` keeps them unless forced) and enrols again.
    const { publicKey, nkey } = enrolledKeys.get("w3")!;
    const again = await mesh("node", "enrol", "w3b", "--key", publicKey, "--nkey", nkey, "--json");
    assert.equal(again.code, EXIT_REFUSED, `${again.out} ${again.err}`);
    assert.match(again.err, /key-retired/);
    assert.match(again.err, /mesh host init --force/);
    const after = await mesh("push", "--wait", "--json");
    assert.equal(after.code, EXIT_OK, `${after.out} ${after.err}`);
    assert.equal(await admitted(seed), false, "the removed node's seed still cannot connect");
  });

  it("R49: the last holder of mesh-broker cannot be unassigned or removed; the refusal names the seat and nothing is recorded", async () => {
    const unassigned = await mesh("unassign", "broker", NODE, "--json");
    assert.equal(unassigned.code, EXIT_REFUSED);
    assert.match(unassigned.err, /last-broker-holder/);
    const removed = await mesh("node", "remove", NODE, "--json");
    assert.equal(removed.code, EXIT_REFUSED);
    assert.match(removed.err, /last-broker-holder/);
    const pushed = await mesh("push", "--wait", "--json");
    assert.equal(pushed.code, EXIT_OK, `${pushed.out} ${pushed.err}`);
    assert.equal(JSON.parse(pushed.out).userList, undefined, "the list still reaches the broker's holder");
  });

  it("R50: rotating the controller's credential: push --wait answers, the bus refuses the old password, a restart connects", async () => {
    const old = credentialFile(local.result.paths.controllerCredential);
    await ask("credential.rotate", { kind: "controller", name: "mesh-controller" });
    const pushed = await mesh("push", "--wait", "--json");
    assert.equal(pushed.code, EXIT_OK, `${pushed.out} ${pushed.err} ${logs.filter((l) => l.includes("controller")).slice(-15).join("\n")}`);
    const report = JSON.parse(pushed.out) as { controllerRotation?: string; freshCredentials: unknown[] };
    assert.equal(report.controllerRotation, "applied");
    assert.deepEqual(report.freshCredentials, [{ kind: "controller", name: "mesh-controller" }]);
    const now = credentialFile(local.result.paths.controllerCredential);
    assert.notEqual(secretOf(now), secretOf(old), "the credential file holds the new password");
    assert.equal(await admitted(old), false, "the old password is refused");
    assert.equal(await admitted(now), true);
    await local.launcher.stopController();
    await local.launcher.controller(local.result.paths);
    await ask("nodes");
    const again = await mesh("push", "--wait", "--json");
    assert.equal(again.code, EXIT_OK, `${again.out} ${again.err}`);
  });

  it("R50: a controller restarted between the rotation and the push still switches, and no password shows in any log", async () => {
    const old = credentialFile(local.result.paths.controllerCredential);
    await ask("credential.rotate", { kind: "controller", name: "mesh-controller" });
    await local.launcher.stopController();
    await local.launcher.controller(local.result.paths);
    const pushed = await mesh("push", "--wait", "--json");
    assert.equal(pushed.code, EXIT_OK, `${pushed.out} ${pushed.err} ${logs.filter((l) => l.includes("controller")).slice(-15).join("\n")}`);
    assert.equal(await admitted(old), false, "the old password is refused");
    const now = credentialFile(local.result.paths.controllerCredential);
    assert.equal(await admitted(now), true);
    for (const line of logs) assert.ok(!line.includes(secretOf(old)) && !line.includes(secretOf(now)), `a log line carries a password: ${line.slice(0, 120)}`);
  });

  it("R50 R73: a module's rotated credential reaches its node before the list refuses the old one, which goes at the push after the node reported", async () => {
    const file = join(local.dir, HOST_DIR, "modules", "showcase", "credential.json");
    const old = credentialFile(file);
    await ask("credential.rotate", { kind: "module", name: "showcase" });
    const pushed = await mesh("push", "--wait", "--json");
    assert.equal(pushed.code, EXIT_OK, `${pushed.out} ${pushed.err}`);
    await waitFor(() => secretOf(credentialFile(file)) !== secretOf(old), { timeoutMs: 10_000, name: "the module's new credential on disk" });
    // Dialed at the genesis address: the rotation points the credential at the broker's overlay name (R7), which resolves nowhere here.
    assert.equal(await admitted({ ...credentialFile(file), address: old.address }), true);
    // R73: the old key stays admitted until the node reported the new one; the next push drops it.
    assert.equal(await admitted(old), true);
    const again = await mesh("push", "--wait", "--json");
    assert.equal(again.code, EXIT_OK, `${again.out} ${again.err}`);
    assert.equal(await admitted(old), false);
  });

  it("R50: mesh up dials with the operator's rotated key once a push installed it, before any other verb took it into the credential file", async () => {
    const file = local.result.paths.operatorCredential;
    const rotated = await mesh("credential", "rotate", "operator", credentialFile(file).user.replace(/^operator-/, ""), "--json");
    assert.equal(rotated.code, EXIT_OK, rotated.err);
    const old = credentialFile(file);
    const fresh = credentialFile(pendingCredentialFile(file));
    const pushed = await mesh("push", "--wait", "--json");
    assert.equal(pushed.code, EXIT_OK, `${pushed.out} ${pushed.err}`);
    // A push the CLI did not see (run elsewhere) leaves the file with the key it took away and
    // the live one pending: the files as that push found them, put back.
    writeBusCredential(pendingCredentialFile(file), fresh);
    writeBusCredential(file, old);
    assert.equal(await admitted(credentialFile(file)), false, "the file holds the key the push took away");
    const nc = await operatorConnection(local.result.paths);
    await nc.close();
    assert.equal(await admitted(credentialFile(file)), true, "and up took the pending key into the file, as every verb does");
  });

  it("R50: a push run from a stale copy of the operator's credential file, whose key that very push takes away: the bus closes its connection before the reply; the CLI says the push was asked for, its outcome unknown here and where to look, that the key was rotated away, and the credential file to use now (exit 2, code closed)", async () => {
    const file = local.result.paths.operatorCredential;
    const old = credentialFile(file);
    // A copy taken before the rotation: nothing pending beside it, so nothing to reconnect with.
    const stale = join(local.root, "stale-operator.json");
    writeBusCredential(stale, old);
    const rotated = await mesh("credential", "rotate", "operator", old.user.replace(/^operator-/, ""), "--json");
    assert.equal(rotated.code, EXIT_OK, rotated.err);
    const pending = credentialFile(pendingCredentialFile(file));
    const pushed = await runMesh(["push", "--credential", stale, "--json"], { MESH_CREDENTIAL: file, MESH_TIMEOUT_MS: "20000" });
    assert.equal(await admitted(old), false, "the push ran: the bus refuses the key it took away");
    assert.equal(await admitted(pending), true);
    assert.equal(pushed.code, EXIT_USAGE, `${pushed.out} ${pushed.err}`);
    const error = pushed.json().error as { code: string; message: string };
    assert.equal(error.code, "closed", error.message);
    assert.ok(error.message.includes(stale), `names the file whose key the bus refuses: ${error.message}`);
    assert.ok(error.message.includes(file), `names the credential file to use now: ${error.message}`);
    assert.match(error.message, /mesh push --wait/, "says how to find the outcome out");
    assert.equal(pushed.err.trim(), `mesh: ${error.message}`);
  });

  it("R50: an operator rotating its own credential: the CLI saves the new password (never prints it), the next push refuses the old one and, readmitting the push's own connection with the new one, puts it in the file, and the operator still commands", async () => {
    const file = local.result.paths.operatorCredential;
    const old = credentialFile(file);
    const rotated = await mesh("credential", "rotate", "operator", old.user.replace(/^operator-/, ""), "--json");
    assert.equal(rotated.code, EXIT_OK, rotated.err);
    const pending = credentialFile(pendingCredentialFile(file));
    assert.notEqual(secretOf(pending), secretOf(old), "the CLI kept the new password beside the credential file it used");
    assert.equal(statSync(pendingCredentialFile(file)).mode & 0o777, 0o600);
    assert.ok(!rotated.out.includes(secretOf(pending)) && !rotated.err.includes(secretOf(pending)), "and printed it nowhere (R3)");
    const pushed = await mesh("push", "--wait", "--json");
    assert.equal(pushed.code, EXIT_OK, `${pushed.out} ${pushed.err}`);
    assert.equal(await admitted(old), false, "the old password is refused");
    assert.equal(await admitted(pending), true);
    // The push's own connection was dropped by the reload and readmitted with the new seed: the
    // switch is recorded then, so the next verb dials the live key first and is never refused.
    assert.equal(secretOf(credentialFile(file)), secretOf(pending), "the push from this CLI moved the new seed into the file");
    assert.equal(existsSync(pendingCredentialFile(file)), false);
    const nodes = await mesh("nodes", "--json");
    assert.equal(nodes.code, EXIT_OK, nodes.err);
    assert.equal(secretOf(credentialFile(file)), secretOf(pending), "the CLI switched to the new password and keeps it in the file");
  });
});
