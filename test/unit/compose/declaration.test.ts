import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  composeDeclaration, composeDeclarations, composeBusUsers, renderUserList, busNamesOfList, requiredProvisions, canonicalJson,
  utf8Length, userListPartCount, USER_LIST_PART_BYTES,
} from "../../../src/compose/index.ts";
import { EXAMPLE_CONFIG, FINGERPRINT, MeshBuilder, exampleMesh, manifests } from "./exampleMesh.ts";
import { newUserKey } from "../../../src/crypto/secrets.ts";
import { busCertificateNames, credentialAt } from "../../../src/projections/index.ts";

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

describe("declarations", () => {
  const mesh = exampleMesh();

  it("R29: an unassigned node composes to an empty declaration, which is still a declaration", () => {
    const b = new MeshBuilder().genesis().controller().node("idle");
    const result = composeDeclaration(b.state(), "idle", EXAMPLE_CONFIG, sha256);
    assert.ok(result.ok);
    assert.deepEqual(result.declaration.modules, []);
    assert.deepEqual(result.declaration.provisions, []);
    assert.equal(result.declaration.userList, undefined);
    assert.match(result.declaration.digest, /^[0-9a-f]{64}$/);
  });

  it("R31: a node's declaration carries its own credential (mesh-sealed, pinned), and a rotation changes its digest alone", () => {
    const b = new MeshBuilder().genesis().controller().node("idle").node("other");
    const before = composeDeclaration(b.state(), "idle", EXAMPLE_CONFIG, sha256);
    const otherBefore = composeDeclaration(b.state(), "other", EXAMPLE_CONFIG, sha256);
    assert.ok(before.ok && otherBefore.ok);
    const recordedKey = credentialAt(b.state().credentials, "node:idle")!.nkey;
    assert.deepEqual(before.declaration.self, { address: "tls://bus.example.net:4222", user: "node-idle", nkey: recordedKey, fingerprint: FINGERPRINT }, "R64: the node's key, no secret");
    const { node: _node, digest: _digest, ...body } = before.declaration;
    assert.equal(before.declaration.digest, sha256(canonicalJson({ node: "idle", ...body })), "the digest covers self");
    const rotatedKey = newUserKey().publicKey;
    b.commit("node", "idle", { type: "CredentialRotated", principal: { kind: "node", name: "idle" }, user: "node-idle", nkey: rotatedKey, address: "tls://bus.example.net:4222" });
    const after = composeDeclaration(b.state(), "idle", EXAMPLE_CONFIG, sha256);
    const otherAfter = composeDeclaration(b.state(), "other", EXAMPLE_CONFIG, sha256);
    assert.ok(after.ok && otherAfter.ok);
    assert.equal(after.declaration.self?.nkey, rotatedKey);
    assert.notEqual(after.declaration.digest, before.declaration.digest, "the rotated node is behind (R31)");
    assert.equal(otherAfter.declaration.digest, otherBefore.declaration.digest, "another node is not");
    const bare = composeDeclaration(new MeshBuilder().genesis().controller().node("bare", false).state(), "bare", EXAMPLE_CONFIG, sha256);
    assert.ok(bare.ok);
    assert.equal(bare.declaration.self, undefined, "a node without a credential carries none");
  });

  it("R3 R34: each module carries its credential beside the address (mesh-sealed), the pinned fingerprint and its env", () => {
    const result = composeDeclaration(mesh.state, "gamma", EXAMPLE_CONFIG, sha256);
    assert.ok(result.ok);
    assert.deepEqual(result.declaration.modules.map((m) => m.module), ["artifact-store", "packet-filter", "showcase"]);
    const showcase = result.declaration.modules.find((m) => m.module === "showcase")!;
    // gamma is on the overlay and alpha holds mesh-broker: the address is where gamma reaches the
    // broker at composition (R7, R10), not the genesis address the credential was minted with
    assert.deepEqual(showcase.credential, { address: "tls://alpha.internal:4222", user: "module-showcase", sealed: "sealed:module-showcase", fingerprint: FINGERPRINT });
    const { MESH_BROKER_ADDRESS, MESH_BROKER_CERTIFICATE, MESH_USER } = showcase.env;
    assert.deepEqual({ MESH_BROKER_ADDRESS, MESH_BROKER_CERTIFICATE, MESH_USER }, { MESH_BROKER_ADDRESS: "tls://alpha.internal:4222", MESH_BROKER_CERTIFICATE: FINGERPRINT, MESH_USER: "module-showcase" });
    assert.deepEqual(showcase.provisions, [{ seat: "git", provision: "git", user: "git-showcase", sealed: "sealed:git-showcase" }]);
    assert.ok(!JSON.stringify(result.declaration).includes(mesh.secrets["module-showcase"]!));
    assert.ok(!/\/\/[^/]*@/.test(JSON.stringify(result.declaration)), "a URL with credentials");
  });

  it("R11 R71: the user list travels only with the declaration of the node holding mesh-broker, named by digest, size and parts, with the hosts the bus's certificate must name", () => {
    const { declarations } = composeDeclarations(mesh.state, EXAMPLE_CONFIG, sha256);
    const byNode = Object.fromEntries(declarations.map((d) => [d.ok ? d.declaration.node : d.node, d]));
    const alpha = byNode.alpha!;
    assert.ok(alpha.ok);
    const users = composeBusUsers(mesh.state, EXAMPLE_CONFIG);
    assert.ok(users.ok);
    const text = renderUserList({ users: users.users, busNames: busCertificateNames(mesh.state) });
    assert.equal(alpha.userListText, text);
    assert.deepEqual(busNamesOfList(text), busCertificateNames(mesh.state), "R71: the list names the certificate's hosts, read back as written");
    const bytes = Buffer.byteLength(text, "utf8");
    assert.deepEqual(alpha.declaration.userList, { digest: sha256(text), bytes, parts: Math.ceil(bytes / USER_LIST_PART_BYTES) });
    assert.ok(!JSON.stringify(alpha.declaration).includes("$2"), "no hash travels in the declaration itself");
    for (const node of ["beta", "gamma"]) {
      const d = byNode[node]!;
      assert.ok(d.ok);
      assert.equal(d.declaration.userList, undefined);
      assert.equal(d.userListText, undefined);
    }
  });

  it("R11: a list's size is its UTF-8 byte count and its part count covers it in USER_LIST_PART_BYTES parts", () => {
    for (const text of ["", "a", "é", "€", "😀", "a\ud800b", "x".repeat(USER_LIST_PART_BYTES), `${"x".repeat(USER_LIST_PART_BYTES)}é`]) {
      assert.equal(utf8Length(text), Buffer.byteLength(text, "utf8"), JSON.stringify(text.slice(0, 8)));
    }
    assert.equal(userListPartCount(0), 1);
    assert.equal(userListPartCount(USER_LIST_PART_BYTES), 1);
    assert.equal(userListPartCount(USER_LIST_PART_BYTES + 1), 2);
    assert.equal(userListPartCount(22 * 1024 * 1024), 88);
  });

  it("R31: a provider's declaration holds the grants for its consumers", () => {
    const beta = composeDeclaration(mesh.state, "beta", EXAMPLE_CONFIG, sha256);
    assert.ok(beta.ok);
    assert.deepEqual(beta.declaration.provisions, [{ seat: "git", provision: "git", consumer: "showcase", user: "git-showcase", sealed: "sealed:git-showcase" }]);
  });

  it("R31: the provisions compositions need but the records lack are named, and composing without them is refused", () => {
    const b = new MeshBuilder().genesis().controller().node("n1").node("n2");
    for (const m of Object.values(manifests)) b.register(m);
    b.issue("showcase").issue("git-server").assign("showcase", "n1").assign("git-server", "n2");
    assert.deepEqual(requiredProvisions(b.state()), [{ seat: "git", provision: "git", consumer: "showcase" }]);
    const refused = composeDeclaration(b.state(), "n1", EXAMPLE_CONFIG, sha256);
    assert.ok(!refused.ok);
    assert.equal(refused.refusal.code, "provision-missing");
    const provider = composeDeclaration(b.state(), "n2", EXAMPLE_CONFIG, sha256);
    assert.ok(!provider.ok);
    assert.equal(provider.refusal.code, "provision-missing");
    b.provision("git", "git", "showcase");
    assert.deepEqual(requiredProvisions(b.state()), []);
    assert.ok(composeDeclaration(b.state(), "n1", EXAMPLE_CONFIG, sha256).ok);
    assert.deepEqual(requiredProvisions(mesh.state), []);
  });

  it("R30: a node that cannot be composed is a typed refusal, and the other nodes still compose", () => {
    const b = new MeshBuilder().genesis().controller().node("ok").node("partial").node("noreg");
    b.register(manifests["packet-filter"]).issue("packet-filter").register(manifests.store)
      .assign("packet-filter", "ok").assign("packet-filter", "partial").assign("store", "partial")   // store never issued
      .assign("ghost", "noreg");                                 // never registered
    const { declarations } = composeDeclarations(b.state(), EXAMPLE_CONFIG, sha256);
    const codes = Object.fromEntries(declarations.map((d) => [d.ok ? d.declaration.node : d.node, d.ok ? "ok" : d.refusal.code]));
    assert.deepEqual(codes, { partial: "ok", noreg: "module-unregistered", ok: "ok" });
    const unknown = composeDeclaration(b.state(), "nobody", EXAMPLE_CONFIG, sha256);
    assert.ok(!unknown.ok);
    assert.equal(unknown.refusal.code, "unknown-node");
  });

  it("a module assigned without a credential is left out alone, named with the step that fixes it; its node is still composed", () => {
    const b = new MeshBuilder().genesis().controller().node("n1").register(manifests["packet-filter"]).issue("packet-filter")
      .register(manifests.store).assign("packet-filter", "n1").assign("store", "n1");
    const composed = composeDeclaration(b.state(), "n1", EXAMPLE_CONFIG, sha256);
    assert.ok(composed.ok);
    assert.deepEqual(composed.declaration.modules.map((m) => m.module), ["packet-filter"]);
    assert.deepEqual(composed.modulesLeftOut?.map((m) => m.module), ["store"]);
    assert.match(composed.modulesLeftOut![0]!.reason, /mesh module issue store/);
    b.issue("store");
    const issued = composeDeclaration(b.state(), "n1", EXAMPLE_CONFIG, sha256);
    assert.ok(issued.ok);
    assert.equal(issued.modulesLeftOut, undefined);
    assert.deepEqual(issued.declaration.modules.map((m) => m.module), ["packet-filter", "store"]);
  });

  it("R12: the broker holder's declaration never carries an empty user list: a broker module without credential is refused", () => {
    const b = new MeshBuilder().genesis().node("alpha", false).register(manifests.broker).issue("broker").assign("broker", "alpha");
    const carried = composeDeclaration(b.state(), "alpha", EXAMPLE_CONFIG, sha256);
    assert.ok(carried.ok);
    assert.match(carried.userListText!, /# module-broker$/m);
    assert.equal(carried.declaration.userList?.digest, sha256(carried.userListText!));
    const c = new MeshBuilder().genesis().node("alpha", false).register(manifests.broker);
    c.commit("module", "broker", { type: "ModuleIssued", module: "broker" });
    c.assign("broker", "alpha");
    const refused = composeDeclaration(c.state(), "alpha", EXAMPLE_CONFIG, sha256);
    assert.ok(!refused.ok);
    assert.equal(refused.refusal.code, "user-list-empty");
  });

  it("determinism: composing twice gives identical bytes and digests, and composing never changes the state", () => {
    const before = canonicalJson(mesh.state);
    const one = composeDeclarations(mesh.state, EXAMPLE_CONFIG, sha256);
    const two = composeDeclarations(exampleMesh().state, EXAMPLE_CONFIG, sha256);
    assert.equal(canonicalJson(one), canonicalJson(two));
    assert.equal(canonicalJson(mesh.state), before);
    for (const d of one.declarations) {
      assert.ok(d.ok);
      const { digest, ...body } = d.declaration;
      assert.equal(digest, sha256(canonicalJson(body)));
    }
  });

  it("R62 R10: on a cluster, a module on many nodes (its run with image and command), on and off the overlay: each digest is sha256 of the body's canonical JSON, and nodes reaching the broker alike carry equal entries", () => {
    const servers = ["tls://bus.example.net:4222", "tls://bus2.example.net:4222", "tls://bus3.example.net:4222"];
    const b = new MeshBuilder()
      .commit("mesh", "mesh", { type: "MeshCreated", genesisAddress: servers[0], addresses: servers, fingerprint: FINGERPRINT, bootstrapUser: "controller-mesh-controller" })
      .controller().node("hub").node("on1").node("on2").node("off1").node("off2")
      .register(manifests.broker).issue("broker").assign("broker", "hub")
      .register({ name: "agent", version: "3", run: { image: "agent:3", command: ["agent", "--serve"] }, uses: ["mesh-store"] })
      .register(manifests.store).issue("store").assign("store", "hub").issue("agent")
      .provision("mesh-store", "database", "agent");
    for (const node of ["hub", "on1", "on2", "off1", "off2"]) b.assign("agent", node);
    b.place("hub", true).place("on1").place("on2");
    const { declarations } = composeDeclarations(b.state(), EXAMPLE_CONFIG, sha256);
    const byNode = new Map(declarations.map((d) => [d.ok ? d.declaration.node : d.node, d]));
    for (const d of declarations) {
      assert.ok(d.ok, JSON.stringify(d));
      const { digest, ...body } = d.declaration;
      assert.equal(digest, sha256(canonicalJson(body)), d.declaration.node);
    }
    const agent = (node: string) => { const d = byNode.get(node)!; assert.ok(d.ok); return d.declaration.modules.find((m) => m.module === "agent")!; };
    assert.deepEqual(agent("on1"), agent("on2"));
    assert.deepEqual(agent("off1"), agent("off2"));
    assert.equal(agent("on1").credential.address, "tls://hub.internal:4222", "R7: placed nodes reach the broker on the overlay");
    assert.deepEqual(agent("off1").credential.addresses, servers, "R62: a node off the overlay lists every server");
    assert.deepEqual(agent("off1").run, { image: "agent:3", command: ["agent", "--serve"] });
    assert.deepEqual(agent("off1").provisions, [{ seat: "mesh-store", provision: "database", user: "database-agent", sealed: "sealed:database-agent" }]);
  });

  it("R31: a record that changes a node's declaration changes its digest, and only its", () => {
    const b = new MeshBuilder().genesis().controller().node("n1").node("n2").register(manifests["packet-filter"]).issue("packet-filter");
    const before = composeDeclarations(b.state(), EXAMPLE_CONFIG, sha256).declarations;
    b.assign("packet-filter", "n2");
    const after = composeDeclarations(b.state(), EXAMPLE_CONFIG, sha256).declarations;
    const digests = (ds: typeof before) => ds.map((d) => (d.ok ? d.declaration.digest : ""));
    assert.equal(digests(before)[0], digests(after)[0]);
    assert.notEqual(digests(before)[1], digests(after)[1]);
  });
});
