/**
 * Provisions end with the nodes they were delivered to (R48) and with an accepted restore (R44),
 * through a real controller on a real nats-server (test/support/controller.ts): the secrets are
 * read where the mesh delivers them, in the declarations each node's consumer holds, opened with
 * the node's own key as its host would.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Declaration } from "../../src/contracts/declaration.ts";
import { desiredFiles } from "../../src/host/apply.ts";
import { parseEnvFile } from "../../src/files/envFile.ts";
import { freshControllerSuite, openAsNode } from "../support/controller.ts";
import { meshClient } from "../../src/client/client.ts";

const example = (name: string): unknown => JSON.parse(readFileSync(new URL(`../../examples/${name}.json`, import.meta.url), "utf8"));

type Grant = { seat: string; provision: string; consumer: string; sealed: string };
type Received = { seat: string; provision: string; sealed: string };

describe("provisions end with the node they were delivered to (R48) and with a restore (R44)", () => {
  const suite = freshControllerSuite();

  it("R48 R44: removing the consumer's node replaces the provision it held, in the removal's own commit (its dry run lists it), the provider's node gets the fresh secret at the next push, which says so; an accepted restore replaces it again", async () => {
    const fixture = suite.fixture;
    const client = meshClient(fixture.operator, "operator-test", { timeoutMs: 20_000 });
    const controller = await fixture.start();
    const keys: Record<string, string> = { hub: await fixture.enrol("hub"), web1: await fixture.enrol("web1") };
    for (const manifest of ["artifacts", "builder", "showcase"]) await fixture.send("module.register", { manifest: example(manifest) });
    for (const module of ["artifacts", "showcase"]) await fixture.send("module.issue", { module });
    await fixture.send("assign", { module: "artifacts", node: "hub" });
    // showcase runs on both nodes; the provider of its artifacts provision on hub.
    await fixture.send("assign", { module: "showcase", node: "web1" });
    await fixture.send("assign", { module: "showcase", node: "hub" });
    await controller.push();

    /** The secrets of showcase's artifacts provision in `node`'s newest declaration: as granted (the provider's side, if there), as received. */
    const secretsOn = async (node: string): Promise<{ granted?: string; received: string }> => {
      const newest = (await fixture.drain(node)).at(-1)!;
      const grant = (newest.provisions as Grant[]).find((p) => p.seat === "artifacts" && p.consumer === "showcase");
      const showcase = (newest.modules as Array<{ module: string; provisions: Received[] }>).find((m) => m.module === "showcase")!;
      const received = openAsNode(keys[node]!, showcase.provisions.find((p) => p.seat === "artifacts")!.sealed);
      return { ...(grant ? { granted: openAsNode(keys[node]!, grant.sealed) } : {}), received };
    };
    const first = await secretsOn("hub");
    assert.equal(first.granted, first.received, "the provider grants what the consumer receives (the control)");
    assert.equal((await secretsOn("web1")).received, first.received, "and web1 holds the same secret (the control)");

    const dry = await client.dryRun("node.remove", { node: "web1" });
    assert.ok(dry.ok && dry.dryRun, JSON.stringify(dry));
    assert.deepEqual(
      dry.events.filter((e) => e.type === "ProvisionRotated").map((e) => [e.seat, e.provision, e.consumer]),
      [["artifacts", "artifacts", "showcase"]],
      "the removal's dry run lists the provision it replaces",
    );
    await fixture.send("node.remove", { node: "web1" });
    const pushed = await controller.push();
    assert.deepEqual(pushed.freshProvisions, [{ seat: "artifacts", provision: "artifacts", consumer: "showcase" }], "the push says which provisions it delivers fresh");
    const afterRemoval = await secretsOn("hub");
    assert.notEqual(afterRemoval.granted, first.received, "the secret that was on web1's disk is no longer the one the provider grants");
    assert.equal(afterRemoval.received, afterRemoval.granted, "the consumer still on hub receives the fresh one");

    const accepted = await fixture.send("replay", { acceptRestore: true });
    assert.deepEqual((accepted as { freshProvisions?: unknown }).freshProvisions, [{ seat: "artifacts", provision: "artifacts", consumer: "showcase" }]);
    const again = await controller.push();
    assert.deepEqual(again.freshProvisions, [{ seat: "artifacts", provision: "artifacts", consumer: "showcase" }]);
    const afterRestore = await secretsOn("hub");
    assert.notEqual(afterRestore.granted, afterRemoval.granted, "an accepted restore replaces every provision secret");
    assert.equal(afterRestore.received, afterRestore.granted);
    await controller.stop();
  });
});

describe("R75: a consumed provision's env names its holder and its secret's file; its provider's logins are in its own folder", () => {
  const suite = freshControllerSuite();

  it("R75: after a push, showcase on web1 is told where artifacts' holder is (hub.internal), its login and the file of its secret; artifacts on hub holds the same secret in its logins.json", async () => {
    const fixture = suite.fixture;
    const controller = await fixture.start();
    const dir = mkdtempSync(join(tmpdir(), "mesh-r75-bus-"));
    try {
      const keys: Record<string, string> = { hub: await fixture.enrol("hub"), web1: await fixture.enrol("web1") };
      for (const manifest of ["artifacts", "builder", "showcase"]) await fixture.send("module.register", { manifest: example(manifest) });
      for (const module of ["artifacts", "showcase"]) await fixture.send("module.issue", { module });
      await fixture.send("overlay.place", { node: "hub", hub: true });
      await fixture.send("overlay.place", { node: "web1" });
      await fixture.send("assign", { module: "artifacts", node: "hub" });
      await fixture.send("assign", { module: "showcase", node: "web1" });
      await controller.push();

      /** The files node's host would write for its newest declaration, under `<dir>/<node>`. */
      const filesOf = async (node: string) => {
        const stateDir = join(dir, node);
        const declaration = Declaration.parse((await fixture.drain(node)).at(-1));
        return { stateDir, files: desiredFiles(declaration, keys[node]!, { stateDir }) };
      };
      const web1 = await filesOf("web1");
      const env = parseEnvFile(web1.files.get("modules/showcase/env")!.text);
      const [provision] = JSON.parse(env.MESH_PROVISIONS!) as Array<{ seat: string; provision: string; protocol: string; user: string; holders: unknown }>;
      assert.deepEqual({ ...provision, user: undefined }, { seat: "artifacts", provision: "artifacts", protocol: "s3", user: undefined, holders: [{ node: "hub", address: "hub.internal" }] });
      assert.equal(env.MESH_PROVISIONS_FILE, join(web1.stateDir, "modules", "showcase", "provisions.json"));
      const received = JSON.parse(web1.files.get("modules/showcase/provisions.json")!.text) as Array<{ seat: string; user: string; secret: string }>;
      assert.equal(received[0]!.user, provision!.user, "the file holds the login the env names");

      const hub = await filesOf("hub");
      const logins = JSON.parse(hub.files.get("modules/artifacts/logins.json")!.text) as Array<{ consumer: string; user: string; secret: string }>;
      assert.deepEqual(logins.map((l) => [l.consumer, l.user, l.secret]), [["showcase", provision!.user, received[0]!.secret]], "the provider creates exactly the login its consumer is told");
      assert.equal(parseEnvFile(hub.files.get("modules/artifacts/env")!.text).MESH_LOGINS_FILE, join(hub.stateDir, "modules", "artifacts", "logins.json"));
      assert.deepEqual([...hub.files.keys()].filter((f) => !f.startsWith("modules/")), [], "nothing of a provision lies outside a module's folder");
    } finally {
      await controller.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
