import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { composeDeclaration } from "../../../src/compose/index.ts";
import { Declaration } from "../../../src/contracts/declaration.ts";
import { DeclarationRefused, desiredFiles } from "../../../src/host/apply.ts";
import { initHostKeys, readNodePrivateKey } from "../../../src/host/index.ts";
import { newPassword, sealToNode } from "../../../src/crypto/secrets.ts";
import { parseEnvFile } from "../../../src/files/envFile.ts";
import { EXAMPLE_CONFIG, MeshBuilder, manifests } from "./exampleMesh.ts";
import { hostDeclaration } from "../../support/hostDeclaration.ts";

/** R75: a module's environment names each provision it consumes; a provider is told its logins in its own folder. */

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
const web = { name: "web", version: "1", uses: ["mesh-store"] };

/** store (mesh-store provides database) on alpha, on the overlay; web, which uses it, on beta. */
function mesh() {
  return new MeshBuilder().genesis().controller().node("alpha").node("beta").place("alpha", true).place("beta")
    .register(manifests.store).register(web).issue("store").issue("web")
    .assign("store", "alpha").assign("web", "beta").provision("mesh-store", "database", "web").state();
}

describe("R75: provisions in a module's environment", () => {
  it("R75: the consumer's env names each provision: seat, provision, protocol, login, and its holders' node and overlay address", () => {
    const result = composeDeclaration(mesh(), "beta", EXAMPLE_CONFIG, sha256);
    assert.ok(result.ok);
    const env = result.declaration.modules.find((m) => m.module === "web")!.env;
    assert.deepEqual(JSON.parse(env.MESH_PROVISIONS!), [
      { seat: "mesh-store", provision: "database", protocol: "postgres", user: "database-web", holders: [{ node: "alpha", address: "alpha.internal" }] },
    ]);
    assert.ok(!JSON.stringify(env).includes("sealed:"), "no secret in the env's declaration");
  });

  it("R75: a holder off the overlay is named by its node alone; a module that consumes nothing gets an empty list", () => {
    const state = new MeshBuilder().genesis().controller().node("alpha").register(manifests.store).register(web).issue("store").issue("web")
      .assign("store", "alpha").assign("web", "alpha").provision("mesh-store", "database", "web").state();
    const result = composeDeclaration(state, "alpha", EXAMPLE_CONFIG, sha256);
    assert.ok(result.ok);
    const byName = Object.fromEntries(result.declaration.modules.map((m) => [m.module, m.env]));
    assert.deepEqual(JSON.parse(byName.web!.MESH_PROVISIONS!)[0].holders, [{ node: "alpha" }]);
    assert.deepEqual(JSON.parse(byName.store!.MESH_PROVISIONS!), []);
  });

  it("R75: the provider's entry names the logins it must create (consumer, login), without a secret", () => {
    const result = composeDeclaration(mesh(), "alpha", EXAMPLE_CONFIG, sha256);
    assert.ok(result.ok);
    const store = result.declaration.modules.find((m) => m.module === "store")!;
    assert.deepEqual(store.logins, [{ consumer: "web", provision: "database", seat: "mesh-store", user: "database-web" }]);
    assert.equal(result.declaration.modules.find((m) => m.module === "web"), undefined);
  });
});

describe("R75: the files a host writes for provisions", () => {
  let dir: string;
  before(() => { dir = mkdtempSync(join(tmpdir(), "mesh-r75-")); });
  after(() => { rmSync(dir, { recursive: true, force: true }); });

  it("R75: the provider's logins (with their secrets) are in its own folder, none outside; both envs name their file", () => {
    const node = join(dir, "alpha");
    const { publicKey } = initHostKeys(node);
    const secret = newPassword();
    const base = hostDeclaration("alpha", publicKey, [
      { module: "store", password: newPassword(), extra: { logins: [{ consumer: "web", provision: "database", seat: "mesh-store", user: "database-web" }] } },
      { module: "web", password: newPassword(), extra: { provisions: [{ seat: "mesh-store", provision: "database", user: "database-web", sealed: sealToNode(publicKey, secret) }] } },
    ], "d");
    const declaration = Declaration.parse({ ...base, provisions: [{ seat: "mesh-store", provision: "database", consumer: "web", user: "database-web", sealed: sealToNode(publicKey, secret) }] });
    const files = desiredFiles(declaration, readNodePrivateKey(node), { stateDir: node, certificatePem: "PEM" });
    assert.deepEqual(JSON.parse(files.get("modules/store/logins.json")!.text), [{ seat: "mesh-store", provision: "database", consumer: "web", user: "database-web", secret }]);
    assert.equal(files.get("modules/store/logins.json")!.mode, 0o600);
    assert.deepEqual([...files.keys()].filter((f) => !f.startsWith("modules/")), [], "nothing outside a module's folder");
    assert.equal(parseEnvFile(files.get("modules/store/env")!.text).MESH_LOGINS_FILE, join(node, "modules/store/logins.json"));
    assert.equal(parseEnvFile(files.get("modules/web/env")!.text).MESH_PROVISIONS_FILE, join(node, "modules/web/provisions.json"));
    assert.equal(JSON.parse(files.get("modules/web/provisions.json")!.text)[0].secret, secret);
    assert.equal(JSON.parse(files.get("modules/store/module.json")!.text).logins, undefined, "module.json holds no logins");
    const orphan = Declaration.parse({ ...declaration, provisions: [] });
    assert.throws(() => desiredFiles(orphan, readNodePrivateKey(node), { stateDir: node }), (e: unknown) => e instanceof DeclarationRefused && e.code === "login-without-grant");
  });

  it("R75: a grant no module on the node names as its login (an older controller) is still written where it was", () => {
    const node = join(dir, "beta");
    const { publicKey } = initHostKeys(node);
    const base = hostDeclaration("beta", publicKey, [{ module: "store", password: newPassword() }], "d");
    const declaration = Declaration.parse({ ...base, provisions: [{ seat: "mesh-store", provision: "database", consumer: "web", user: "database-web", sealed: sealToNode(publicKey, newPassword()) }] });
    const files = desiredFiles(declaration, readNodePrivateKey(node), { stateDir: node });
    assert.ok(files.has("provisions/mesh-store/database/web.json"));
  });
});
