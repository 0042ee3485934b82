/**
 * R72 + R73 end to end (issue 27's done-means): the example greeter (examples/greeter.json, its
 * real `run.command` `mesh-greeter`) is run by the local node's agent on a whole mesh (`mesh up` in
 * a temporary folder: the bus a child process, the controller and the host agent in this process).
 * Work is submitted with message ids before, during and after `credential rotate module greeter`
 * and its push: the runner restarts the greeter with the new seed, its log shows no authorization
 * violation (the kit writes each bus status as a line of it), every item is taken exactly once, and
 * the push after the node reported drops the old seed.
 */
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { operatorUser, EXAMPLES_DIR, HOST_DIR } from "../../src/up/up.ts";
import type { BusCredential } from "../../src/bus/connect.ts";
import { readBusCredential } from "../../src/files/index.ts";
import { publicKeyOfSeed } from "../../src/crypto/secrets.ts";
import { moduleLogFile } from "../../src/host/moduleLog.ts";
import type { ModuleRun } from "../../src/contracts/report.ts";
import { connectModule, type MeshModule } from "../../src/kit/index.ts";
import { askAs } from "../support/client.ts";
import { waitFor } from "../support/natsServer.ts";
import { admitted, localMesh, LOCAL_NODE as NODE } from "../support/localMesh.ts";

const GREETER = "greeter";
/** A module that submits greet work and follows the greeted event, written with the kit. */
const SENDER = { name: "sender", version: "1.0.0", uses: ["greetings"], follows: [{ seat: "greetings", event: "greeted" }] };

/** How many times each of `names` occurs in `seen`, for the names not seen exactly once. */
function notOnce(names: readonly string[], seen: readonly string[]): Record<string, number> {
  const counts = new Map<string, number>();
  for (const name of seen) counts.set(name, (counts.get(name) ?? 0) + 1);
  return Object.fromEntries(names.filter((n) => counts.get(n) !== 1).map((n) => [n, counts.get(n) ?? 0]));
}

describe("R72 R73: a running module survives its rotation", () => {
  let sender: MeshModule | undefined;
  after(async () => { await sender?.close().catch(() => undefined); });
  const local = localMesh({ prefix: "mesh-rotation-running-", upTimeoutMs: 60_000, manifests: [join(EXAMPLES_DIR, "broker.json"), join(EXAMPLES_DIR, "greeter.json")] });
  const { ask, pushWait } = local;
  const hostDir = () => join(local.dir, HOST_DIR);
  /** The greeter's run state in alpha's last report as the bus holds it (what a push reads, R73). */
  const lastRun = async (): Promise<ModuleRun | undefined> => {
    const reply = await askAs(local.operator, operatorUser(local.result.paths), "reports", { nodes: [NODE] }, 10_000);
    const reports = (reply as { reports?: Array<{ modules?: ModuleRun[] }> }).reports ?? [];
    return reports[0]?.modules?.find((m) => m.module === GREETER);
  };
  /** The greeter's run state once `test` holds of it. */
  const greeterRun = (test: (m: ModuleRun) => boolean, name: string) =>
    waitFor(async () => {
      const run = await lastRun();
      return run !== undefined && test(run) ? run : undefined;
    }, { timeoutMs: 20_000, name, intervalMs: 200 });
  /** The greeter's output, every log file of it the agent keeps (R72). */
  const greeterOutput = (): string[] => {
    const file = moduleLogFile(hostDir(), GREETER);
    return [`${file}.2`, `${file}.1`, file].filter(existsSync).flatMap((f) => readFileSync(f, "utf8").split("\n"));
  };

  before(async () => {
    await ask("module.register", { manifest: SENDER });
    await ask("module.issue", { module: SENDER.name });
    await ask("assign", { module: SENDER.name, node: NODE });
    await pushWait();
  });

  it("R72 R73: the greeter run by its agent is restarted with its new seed on rotate + push, never refused (0 authorization violations in its log), takes every work item once, and the next push refuses the old seed", { timeout: 180_000 }, async () => {
    const credentialFile = join(hostDir(), "modules", GREETER, "credential.json");
    const old = readBusCredential(credentialFile);
    const first = await greeterRun((m) => m.state === "running", "the greeter running");
    assert.equal(first.startedWithNkey, publicKeyOfSeed(old.seed!), "started with its first key");
    await waitFor(() => greeterOutput().some((l) => l.startsWith("greeter: answering")), { timeoutMs: 20_000, name: "the greeter connected" });

    sender = await connectModule({ envFile: join(hostDir(), "modules", SENDER.name, "env"), log: false });
    const followed: string[] = [];
    await sender.follow("greeted", (event) => { followed.push((event.data as { name: string }).name); });
    const submitted: string[] = [];
    const submit = async (name: string) => {
      await sender!.submit("greet", { name }, { id: `work-${name}` });
      submitted.push(name);
    };
    for (let i = 0; i < 5; i += 1) await submit(`before-${i}`);

    // Work keeps coming while the rotation is pushed and the greeter restarts.
    let submitting = true;
    const during = (async () => {
      for (let i = 0; submitting; i += 1) {
        await submit(`during-${i}`);
        await new Promise((done) => setTimeout(done, 50));
      }
    })();
    /** Rotate + push; the greeter restarted on its new key; the second push: returns the new credential. */
    const rotation = async (): Promise<BusCredential> => {
      await ask("credential.rotate", { kind: "module", name: GREETER });
      assert.deepEqual(await pushWait(), [{ principal: { kind: "module", name: GREETER }, until: [NODE] }], "the old key stays until alpha reports");
      const rotated = readBusCredential(credentialFile);
      const newKey = publicKeyOfSeed(rotated.seed!);
      assert.notEqual(newKey, first.startedWithNkey);
      const restarted = await greeterRun((m) => m.state === "running" && m.startedWithNkey === newKey, "R73: the greeter running with its new key");
      assert.notEqual(restarted.pid, first.pid, "the runner restarted it");
      await waitFor(() => greeterOutput().filter((l) => l.startsWith("greeter: answering")).length >= 2, { timeoutMs: 20_000, name: "the restarted greeter connected" });
      // The node reported the greeter running with the new key: this push drops the old one.
      assert.equal(await pushWait(), undefined, "no overlap is left open");
      return rotated;
    };
    const rotated = await rotation().finally(async () => {
      submitting = false;
      await during;
    });
    for (let i = 0; i < 5; i += 1) await submit(`after-${i}`);

    await waitFor(() => submitted.every((n) => followed.includes(n)), { timeoutMs: 30_000, name: "every work item's greeting followed" });
    assert.ok(submitted.filter((n) => n.startsWith("during-")).length >= 5, `work was submitted during the rotation: ${submitted.join(" ")}`);
    const output = greeterOutput();
    assert.deepEqual(output.filter((l) => /authorization/i.test(l)), [], "the greeter was never refused");
    assert.deepEqual(notOnce(submitted, followed), {}, "each greeting announced once");
    const taken = output.flatMap((l) => /^greeted (\S+)$/.exec(l)?.slice(1) ?? []);
    assert.deepEqual(notOnce(submitted, taken), {}, `each work item taken once: ${output.join("\n")}`);
    // Dialled at the genesis address: the rotated credential names the broker's overlay name (R7).
    assert.equal(await admitted(old), false, "the old seed is refused after the second push");
    assert.equal(await admitted({ ...rotated, address: old.address }), true, "the new seed is admitted");
  });
});
