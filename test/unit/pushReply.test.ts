import { afterEach, beforeEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { pushReply } from "../../src/push/pushCommand.ts";
import type { NodeReport, PushReport } from "../../src/push/push.ts";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { exitOf, pushClosedMessage, renderPush } from "../../src/cli/push.ts";
import { EXIT_OK, EXIT_REFUSED, credentialFileNow } from "../../src/cli/context.ts";
import { pendingCredentialFile } from "../../src/controller/credential.ts";
import { writeBusCredential } from "../../src/files/index.ts";
import { newUserKey } from "../../src/crypto/secrets.ts";

const MIB = 1024 * 1024;

function reportOf(nodes: NodeReport[]): PushReport {
  return {
    pushId: "push-1", dryRun: false, recordsSequence: 9, nodes, leftOut: [], freshCredentials: [], freshProvisions: [], provisionsMinted: 0,
    raised: { created: 0, updated: 0, refused: [] }, timedOut: nodes.filter((n) => n.outcome === "timed-out").map((n) => n.node), rounds: 1, boundHit: false,
  };
}

describe("pushReply", () => {
  it("R59: a 10,000-node push report fits the default 1 MiB max payload: counts cover every node, the nodes needing attention come first, the rest counted with where to read them", () => {
    const nodes: NodeReport[] = Array.from({ length: 10_000 }, (_, i) => {
      const node = `node-${String(i).padStart(5, "0")}-in-a-rack-with-a-long-name`;
      const digest = "d".repeat(64);
      if (i % 1000 === 3) return { node, outcome: "failed", digest, error: "the node could not apply it: disk full" };
      if (i % 1000 === 5) return { node, outcome: "timed-out", digest };
      return { node, outcome: "applied", digest };
    });
    const report = reportOf(nodes);
    assert.ok(Buffer.byteLength(JSON.stringify(report)) > MIB, "the whole report passes 1 MiB");
    const reply = pushReply(report, MIB);
    assert.ok(Buffer.byteLength(JSON.stringify(reply)) <= MIB);
    assert.deepEqual(reply.counts, { applied: 9_980, failed: 10, "timed-out": 10 });
    assert.deepEqual(reply.nodes.slice(0, 20).map((n) => n.outcome).sort(), [...Array(10).fill("failed"), ...Array(10).fill("timed-out")]);
    assert.equal(reply.nodes.length + reply.omitted!.nodes!.count, 10_000);
    assert.match(reply.omitted!.nodes!.see, /mesh history push push-1/);
    assert.equal(exitOf(reply), EXIT_REFUSED);
    const lines = renderPush(reply);
    assert.ok(lines.includes("9980 applied, 10 failed, 10 timed-out"), "the summary counts every node");
    assert.ok(lines.some((l) => /^\d+ more nodes not shown/.test(l)));
  });

  it("R59: a reply that fits is the whole report with its counts, nothing omitted; a cut reply of only good outcomes exits 0", () => {
    const small = reportOf([{ node: "a", outcome: "sent", digest: "d" }, { node: "b", outcome: "unchanged", digest: "d" }]);
    const reply = pushReply(small, MIB);
    assert.deepEqual(reply.nodes, small.nodes);
    assert.deepEqual(reply.counts, { sent: 1, unchanged: 1 });
    assert.equal(reply.omitted, undefined);
    const many = pushReply(reportOf(Array.from({ length: 200 }, (_, i) => ({ node: `n${i}`, outcome: "sent" as const, digest: "d".repeat(64) }))), 4096);
    assert.ok(many.omitted?.nodes);
    assert.equal(exitOf(many), EXIT_OK);
  });
});

describe("renderPush: fresh keys and the controller's rotation", () => {
  const fresh = [{ kind: "module" as const, name: "web" }, { kind: "node" as const, name: "vm" }];
  const broker = (outcome: NodeReport["outcome"]): NodeReport => ({ node: "vm", outcome, digest: "d".repeat(64) });

  it("R44 R50: names the fresh keys as refusing the old ones only when the user list reached the bus", () => {
    const installed = renderPush({ ...reportOf([broker("applied")]), freshCredentials: fresh });
    const line = installed.find((l) => l.includes("module web"));
    assert.ok(line !== undefined && /the bus refuses the old ones/.test(line) && !/password/.test(line), installed.join("\n"));
    const undelivered = renderPush({
      ...reportOf([broker("refused")]), freshCredentials: fresh,
      userList: { code: "user-list-undelivered", message: "the user list reached no holder of mesh-broker" },
    });
    const pending = undelivered.find((l) => l.includes("module web"));
    assert.ok(pending !== undefined && !/refuse/.test(pending) && /still admit/.test(pending), undelivered.join("\n"));
  });

  it("R50: names fresh keys as in the list sent, live once the broker's holder applies it, when no report says it applied (timed out, not waited for, failed)", () => {
    for (const outcome of ["timed-out", "sent", "failed"] as const) {
      const lines = renderPush({ ...reportOf([broker(outcome)]), freshCredentials: fresh });
      const line = lines.find((l) => l.includes("module web"));
      assert.ok(line !== undefined, lines.join("\n"));
      assert.ok(!/in this user list/.test(line) && !/refuses the old ones\)/.test(line), `${outcome}: ${line}`);
      assert.match(line, /user list sent/, outcome);
      assert.match(line, /once the broker's holder applies it/, outcome);
    }
  });

  it("R50: a cut reply (R59) is judged by its counts: one timed-out node keeps the fresh keys pending", () => {
    const lines = renderPush({ ...reportOf([broker("applied")]), counts: { applied: 1, "timed-out": 1 }, freshCredentials: fresh });
    const line = lines.find((l) => l.includes("module web"));
    assert.ok(line !== undefined && /once the broker's holder applies it/.test(line), lines.join("\n"));
  });

  it("R50: the line of the broker's holder decides: it applied, so the fresh keys are live though another node timed out (a new-user trial: a node with no agent made the push say the old keys may still be admitted)", () => {
    const holder = { ...broker("applied"), holdsUserList: true as const };
    const other: NodeReport = { node: "web1", outcome: "timed-out", digest: "e".repeat(64) };
    const lines = renderPush({ ...reportOf([holder, other]), freshCredentials: fresh });
    const line = lines.find((l) => l.includes("module web"));
    assert.ok(line !== undefined && /the broker's holder applied/.test(line) && /refuses the old ones/.test(line), lines.join("\n"));
    for (const outcome of ["timed-out", "sent", "failed"] as const) {
      const pending = renderPush({ ...reportOf([{ ...broker(outcome), holdsUserList: true }, { ...other, outcome: "applied" }]), freshCredentials: fresh });
      const said = pending.find((l) => l.includes("module web"));
      assert.ok(said !== undefined && /once the broker's holder applies it/.test(said), `${outcome}: ${pending.join("\n")}`);
    }
  });

  it("R14 R50: the controller's rotation applied is the broker's own word: the fresh keys are live even when another node timed out", () => {
    const lines = renderPush({
      ...reportOf([broker("applied"), { node: "other", outcome: "timed-out", digest: "e".repeat(64) }]), freshCredentials: fresh, controllerRotation: "applied",
    });
    const line = lines.find((l) => l.includes("module web"));
    assert.ok(line !== undefined && /applied/.test(line) && /refuses the old ones/.test(line), lines.join("\n"));
  });

  it("R50 R60: on a cluster the servers' own outcomes decide: every server reloaded the list, so the old keys are refused now, even with the broker's line only sent (not waited for)", () => {
    const servers = [1, 2, 3].map((i) => ({ node: "vm", server: `bus-${i}`, ok: true, changed: true }));
    const lines = renderPush({ ...reportOf([broker("sent")]), freshCredentials: fresh, servers });
    const line = lines.find((l) => l.includes("module web"));
    assert.ok(line !== undefined && /refuses the old ones/.test(line) && !/may still admit/.test(line), lines.join("\n"));
    assert.ok(!lines.some((l) => /may still admit|still admits/.test(l)), lines.join("\n"));
  });

  it("R50 R60: a server that missed the list is the one that may still admit the old keys, and the line names it", () => {
    const servers = [{ node: "vm", server: "bus-1", ok: true, changed: true }, { node: "vm", server: "bus-2", ok: false, error: "reload refused" }, { node: "vm", server: "bus-3", ok: true, changed: true }];
    const lines = renderPush({ ...reportOf([broker("applied")]), freshCredentials: fresh, servers });
    const line = lines.find((l) => l.includes("module web"));
    assert.ok(line !== undefined && /bus-2/.test(line) && /may still admit/.test(line) && !/bus-1|bus-3/.test(line), lines.join("\n"));
    assert.ok(!/the bus refuses the old ones/.test(line), line);
  });

  it("R14 R50: says the controller's own rotated key, not a password", () => {
    const lines = renderPush({ ...reportOf([broker("applied")]), controllerRotation: "applied" });
    assert.ok(lines.some((l) => /controller's own rotated key: applied/.test(l)), lines.join("\n"));
    assert.ok(!lines.some((l) => /password/.test(l)));
  });
});

describe("a push whose connection the bus closed before the reply (a new-user trial: a stale copy of the operator's file)", () => {
  const operator = (seed: string) => ({ address: "tls://127.0.0.1:4222", user: "operator-admin", seed, fingerprint: Array.from({ length: 32 }, () => "AB").join(":") });
  let dir: string;
  let stale: string;
  let configured: string;
  const old = newUserKey().seed;
  const fresh = newUserKey().seed;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "mesh-push-closed-"));
    stale = join(dir, "copy.json");
    configured = join(dir, "operator.json");
    writeBusCredential(stale, operator(old));
  });
  afterEach(() => { rmSync(dir, { recursive: true, force: true }); });

  it("R50: the credential file to use now: the configured one holding the new key, or keeping it pending beside it; the refused file's own pending key first; none when no file of that user holds another key", () => {
    writeBusCredential(configured, operator(old));
    assert.equal(credentialFileNow(stale, configured), undefined, "the configured file holds the same refused key");
    writeBusCredential(pendingCredentialFile(configured), operator(fresh));
    assert.deepEqual(credentialFileNow(stale, configured), { file: configured, pending: true });
    writeBusCredential(configured, operator(fresh));
    assert.deepEqual(credentialFileNow(stale, configured), { file: configured, pending: false });
    writeBusCredential(pendingCredentialFile(stale), operator(fresh));
    assert.deepEqual(credentialFileNow(stale, configured), { file: stale, pending: true });
    writeBusCredential(configured, { ...operator(fresh), user: "operator-other" });
    rmSync(pendingCredentialFile(stale));
    rmSync(pendingCredentialFile(configured));
    assert.equal(credentialFileNow(stale, configured), undefined, "another operator's file is not this one's");
  });

  it("R50: with MESH_CREDENTIAL naming the stale copy, the default credential file is looked at too, and named with how to dial it (a verification trial)", () => {
    const fallback = join(dir, "default-operator.json");
    writeBusCredential(fallback, operator(old));
    writeBusCredential(pendingCredentialFile(fallback), operator(fresh));
    assert.deepEqual(credentialFileNow(stale, stale, fallback), { file: fallback, pending: true });
    const said = pushClosedMessage({ file: stale, configured: stale, user: "operator-admin", keyRefused: true, useNow: { file: fallback, pending: true } });
    assert.ok(said.includes(`use ${fallback} (the default credential file: leave --credential out and MESH_CREDENTIAL unset)`), said);
    const configuredSaid = pushClosedMessage({ file: stale, configured, user: "operator-admin", keyRefused: true, useNow: { file: configured, pending: true } });
    assert.ok(configuredSaid.includes("(the configured credential file: leave --credential out)"), configuredSaid);
  });

  it("R31 R50: says the outcome is unknown and where to read it; with the key refused, that a rotation took it away and which file to use now", () => {
    const refused = pushClosedMessage({ file: stale, user: "operator-admin", keyRefused: true, useNow: { file: configured, pending: true } });
    const lines = refused.split("\n");
    assert.equal(lines.length, 3, refused);
    assert.ok(lines[0]!.includes(stale) && lines[0]!.includes("mesh credential rotate operator admin"), refused);
    assert.ok(lines[1]!.includes("mesh push --wait") && lines[1]!.includes("mesh nodes"), refused);
    assert.ok(lines[2]!.includes(configured) && lines[2]!.includes(pendingCredentialFile(configured)), refused);
    const nowhere = pushClosedMessage({ file: stale, user: "operator-admin", keyRefused: true });
    assert.equal(nowhere.split("\n").length, 3, "no file found: it says where the rotation kept the new key");
    const other = pushClosedMessage({ file: stale, user: "operator-admin", keyRefused: false, reason: "connection reset" });
    assert.equal(other.split("\n").length, 2, "the key not refused: no word of rotation or another file");
    assert.ok(other.includes("connection reset") && !other.includes("rotate"), other);
  });
});

/**
 * Found by a new-user trial: on a cluster, a push that repaired a server which had missed a list
 * said so only in `--json`'s `servers`; the readable report and `mesh up`'s lines now say it.
 */
describe("renderPush: each server's user list (cluster)", () => {
  const applied: NodeReport = { node: "vm", outcome: "applied", digest: "d".repeat(64) };

  it("R60: a server that took the list while the others already ran it is named repaired (it had missed an earlier one)", () => {
    const lines = renderPush({
      ...reportOf([applied]),
      servers: [
        { node: "vm", server: "mesh-bus-1", ok: true, changed: false },
        { node: "vm", server: "mesh-bus-2", ok: true, changed: true },
        { node: "vm", server: "mesh-bus-3", ok: true, changed: false },
      ],
    });
    const line = lines.find((l) => l.includes("mesh-bus-2"));
    assert.ok(line !== undefined, lines.join("\n"));
    assert.match(line, /mesh-bus-2 repaired/);
    assert.match(line, /mesh-bus-1 unchanged/);
    assert.doesNotMatch(line, /mesh-bus-1 repaired|mesh-bus-3 repaired/);
  });

  it("R60: a list every server took anew is reloaded on each, none repaired; a missed server is named with the next push as its fix", () => {
    const lines = renderPush({
      ...reportOf([applied]),
      servers: [
        { node: "vm", server: "mesh-bus-1", ok: true, changed: true },
        { node: "vm", server: "mesh-bus-2", ok: false, error: "its monitoring endpoint did not answer" },
      ],
    });
    assert.ok(!lines.some((l) => /repaired/.test(l)), lines.join("\n"));
    assert.ok(lines.some((l) => /mesh-bus-1 reloaded/.test(l)), lines.join("\n"));
    assert.ok(lines.some((l) => /server mesh-bus-2 missed the user list: its monitoring endpoint did not answer; the next push sends it again/.test(l)), lines.join("\n"));
    assert.equal(exitOf({ ...reportOf([applied]), servers: [{ node: "vm", server: "mesh-bus-2", ok: false }] }), EXIT_REFUSED);
  });
});
