/**
 * R71 on a whole mesh of two nodes: a module on the node that does not hold the broker dials the
 * address its env names and verifies the bus with an ordinary TLS client against its
 * `certificate.pem` (no pin, nothing turned off), before and after the broker's seat is handed
 * over to the other node. One box: `<node>.internal` resolves nowhere, so the client dials
 * 127.0.0.1 and checks the name its env gives (TLS server name), as a resolver would make it.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { HOST_DIR } from "../../src/up/up.ts";
import { EXIT_OK } from "../../src/cli/context.ts";
import { parseBusAddress } from "../../src/projections/index.ts";
import { parseEnvFile } from "../../src/files/envFile.ts";
import { dialWithEnv, localMesh, LOCAL_NODE as NODE } from "../support/localMesh.ts";

const app = { name: "app", version: "1.0.0" };

/** A module's env file as key → value. */
function envFile(path: string): Record<string, string> {
  return parseEnvFile(readFileSync(path, "utf8"));
}

describe("R71: a module on the other node verifies the bus against its certificate.pem, across a handover", () => {
  const local = localMesh({ prefix: "mesh-ca-two-", cliTimeoutMs: 30_000 });
  const { ask, mesh, runNode } = local;

  it("R71: the module on beta connects verified before and after mesh-broker is handed over from alpha to beta", async () => {
    // beta: a second node on this box, its agent able to install the list on the one bus (a holder may be either).
    const stateDir = await runNode("beta", { installsList: true });
    await ask("overlay.place", { node: "beta" });
    await ask("module.register", { manifest: app });
    await ask("module.issue", { module: "app" });
    await ask("assign", { module: "app", node: "beta" });
    const first = await mesh("push", "--wait", "--json");
    assert.equal(first.code, EXIT_OK, `${first.out} ${first.err}`);
    const env = envFile(join(stateDir, "modules", "app", "env"));
    assert.equal(parseBusAddress(env.MESH_BROKER_ADDRESS!).host, `${NODE}.internal`, "beta is told the broker holder's overlay name (R7)");
    await (await dialWithEnv(env)).close();

    const holder = (await ask("where")) as { broker: string | null };
    assert.equal(holder.broker, NODE);
    await ask("seat.handover", { seat: "mesh-broker", from: NODE, to: "beta" });
    const moved = await mesh("push", "--wait", "--json");
    assert.equal(moved.code, EXIT_OK, `${moved.out} ${moved.err}`);
    const after = envFile(join(stateDir, "modules", "app", "env"));
    await (await dialWithEnv(after)).close();
    // Nobody locked out: a module on alpha is now told beta's overlay name, which the reissued certificate names.
    const onAlpha = envFile(join(local.dir, HOST_DIR, "modules", "showcase", "env"));
    assert.equal(parseBusAddress(onAlpha.MESH_BROKER_ADDRESS!).host, "beta.internal");
    await (await dialWithEnv(onAlpha)).close();
  });
});
