import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { composeBusUsers, renderUserList } from "../../../src/compose/index.ts";
import { everyCredential, evolve, initialState } from "../../../src/projections/index.ts";
import { CONTROLLER_NAME, busUser } from "../../../src/names.ts";
import { BOOTSTRAP_NKEY } from "../../../src/genesis.ts";
import { EXAMPLE_CONFIG, MeshBuilder, exampleMesh, fakeHash, manifests } from "./exampleMesh.ts";
import { readUserList } from "../../../installer/carried.ts";
import { publicKeyOfSeed } from "../../../src/crypto/secrets.ts";

describe("the bus user list", () => {
  it("R12: a list with no users is refused", () => {
    const genesisOnly = new MeshBuilder().genesis().state();
    const list = composeBusUsers(genesisOnly, EXAMPLE_CONFIG);
    assert.equal(list.ok, false);
    if (!list.ok) assert.equal(list.refusal.code, "user-list-empty");
    const empty = composeBusUsers(initialState, EXAMPLE_CONFIG);
    assert.equal(empty.ok, false);
  });

  it("R12: principals without a credential are left out and named", () => {
    const b = new MeshBuilder().genesis().operator("ada")
      .node("alpha").node("bare", false)
      .register(manifests.showcase).register(manifests.broker).register(manifests["build-machine"])
      .issue("showcase", false).assign("broker", "alpha");
    const list = composeBusUsers(b.state(), EXAMPLE_CONFIG);
    assert.ok(list.ok);
    assert.deepEqual(list.users.map((u) => u.user), ["node-alpha", "operator-ada"]);
    assert.deepEqual(list.leftOut.map((l) => `${l.principal.kind}:${l.principal.name}`), [
      `controller:${CONTROLLER_NAME}`, "module:broker", "module:showcase", "node:bare",
    ]);
    for (const l of list.leftOut) assert.ok(l.reason.length > 0);
  });

  it("R11 R63: every principal with a credential is an nkey user with its recorded public key, never a seed, a hash or a password (R3)", () => {
    const mesh = exampleMesh();
    const list = composeBusUsers(mesh.state, EXAMPLE_CONFIG);
    assert.ok(list.ok);
    assert.equal(list.users.length, everyCredential(mesh.state.credentials).length);
    for (const user of list.users) {
      assert.equal(user.nkey, publicKeyOfSeed(mesh.secrets[user.user]!), `${user.user} is listed by its public key`);
      assert.equal((user as { password?: unknown }).password, undefined);
    }
    const text = renderUserList(list);
    for (const seed of Object.values(mesh.secrets)) assert.ok(!text.includes(seed), "a seed in the user list");
    assert.ok(!/password|\$2[aby]\$/.test(text), "no password and no bcrypt hash in the list");
    const read = readUserList(text);
    assert.deepEqual(read.map((u) => [u.user, u.nkey]), list.users.map((u) => [u.user, u.nkey]), "the names stay readable beside the keys");
    assert.deepEqual(read.map((u) => u.permissions), list.users.map((u) => u.permissions));
  });

  it("R63: a credential recorded before nkeys (a bcrypt hash) is on no list: left out, named with the rotation that gives it a key", () => {
    const b = new MeshBuilder().genesis().controller().operator("ada");
    const legacy = new MeshBuilder(fakeHash).genesis().node("old").operator("bob");
    for (const c of legacy.commits.slice(1)) b.commit(c.commit.entity.kind, c.commit.entity.id, ...(c.commit.events as never[]));
    const list = composeBusUsers(b.state(), EXAMPLE_CONFIG);
    assert.ok(list.ok);
    assert.deepEqual(list.users.map((u) => u.user).sort(), ["controller-mesh-controller", "operator-ada"]);
    const old = list.leftOut.find((l) => l.principal.name === "old")!;
    assert.match(old.reason, /mesh host rotate-key/);
    assert.match(list.leftOut.find((l) => l.principal.name === "bob")!.reason, /mesh credential rotate operator bob/);
    const text = renderUserList(list);
    assert.ok(!/password|\$2[aby]\$/.test(text), "no hash in the list");
  });

  it("R13 R63: a principal other than the controller recorded on the genesis bootstrap key (enrolled before that was refused) is on no list, named; the controller still on it is listed until its rotation (R14)", () => {
    const b = new MeshBuilder().genesis().operator("ada").node("vm3")
      .commit("node", "vm3", { type: "CredentialRotated", principal: { kind: "node", name: "vm3" }, user: "node-vm3", nkey: BOOTSTRAP_NKEY, address: "tls://bus.example.net:4222" })
      .commit("controller", CONTROLLER_NAME, { type: "CredentialMinted", principal: { kind: "controller", name: CONTROLLER_NAME }, user: busUser("controller", CONTROLLER_NAME), nkey: BOOTSTRAP_NKEY, address: "tls://bus.example.net:4222" });
    const list = composeBusUsers(b.state(), EXAMPLE_CONFIG);
    assert.ok(list.ok);
    assert.deepEqual(list.users.map((u) => u.user), [busUser("controller", CONTROLLER_NAME), "operator-ada"]);
    const vm3 = list.leftOut.find((l) => l.principal.name === "vm3");
    assert.ok(vm3 && /mesh node remove vm3/.test(vm3.reason), JSON.stringify(list.leftOut));
  });

  it("R11: rendering is deterministic: the same records give the same bytes, in any fold order of equal facts", () => {
    const one = exampleMesh();
    const two = exampleMesh();
    const a = composeBusUsers(one.state, EXAMPLE_CONFIG);
    const b = composeBusUsers(evolve(initialState, two.commits), EXAMPLE_CONFIG);
    assert.ok(a.ok && b.ok);
    assert.equal(renderUserList(a), renderUserList(b));
    const reversed = { users: [...a.users].reverse() };
    assert.equal(renderUserList(reversed), renderUserList(a));
  });

  it("R12: a principal with nothing to publish is denied every publish instead of an empty (open) allow list", () => {
    const list = composeBusUsers(exampleMesh().state, EXAMPLE_CONFIG);
    assert.ok(list.ok);
    const line = renderUserList(list).split("\n").find((l) => l.endsWith("# module-packet-filter"))!;
    assert.match(line, /publish: \{deny: \[">"\]\}/);
    assert.ok(!/allow: \[\]/.test(renderUserList(list)));
  });
});
