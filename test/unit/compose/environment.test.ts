import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  composeDeclaration, composeTopology, covers, moduleEnvironment, permissionsOf,
  type FollowEntry, type ModuleEnvironment, type SubmitEntry, type ToolEntry, type WorkEntry, type EmitEntry,
} from "../../../src/compose/index.ts";
import { EVENTS_STREAM, busUser, principalKey, eventSubject, followConsumer, inboxPrefix, toolSubject, workConsumer, workStream, workSubject } from "../../../src/names.ts";
import { EXAMPLE_CONFIG, FINGERPRINT, exampleMesh } from "./exampleMesh.ts";
import { credentialAt, moduleNames } from "../../../src/projections/index.ts";

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** The JSON lists of an environment, parsed. */
function lists(env: ModuleEnvironment) {
  return {
    work: JSON.parse(env.MESH_WORK) as WorkEntry[],
    submits: JSON.parse(env.MESH_SUBMITS) as SubmitEntry[],
    emits: JSON.parse(env.MESH_EMITS) as EmitEntry[],
    follows: JSON.parse(env.MESH_FOLLOWS) as FollowEntry[],
    tools: JSON.parse(env.MESH_TOOLS) as ToolEntry[],
  };
}

describe("a module's environment", () => {
  const mesh = exampleMesh();

  it("R57: names the work stream and consumer, the events it emits, the submits, follow consumers, tools and its inbox prefix", () => {
    const builder = composeDeclaration(mesh.state, "beta", EXAMPLE_CONFIG, sha256);
    assert.ok(builder.ok);
    const env = builder.declaration.modules.find((m) => m.module === "build-machine")!.env;
    assert.equal(env.MESH_USER, busUser("module", "build-machine"));
    assert.equal(env.MESH_INBOX_PREFIX, inboxPrefix(busUser("module", "build-machine")));
    assert.equal(env.MESH_BROKER_CERTIFICATE, FINGERPRINT);
    assert.deepEqual(lists(env), {
      work: [{ seat: "mesh-build", stream: workStream("mesh-build"), consumer: workConsumer("mesh-build"), subjects: [workSubject("mesh-build", "build")] }],
      submits: [],
      emits: [{ seat: "mesh-build", event: "built", subject: eventSubject("mesh-build", "built") }],
      follows: [],
      tools: [],
    });

    const gamma = composeDeclaration(mesh.state, "gamma", EXAMPLE_CONFIG, sha256);
    assert.ok(gamma.ok);
    const showcase = gamma.declaration.modules.find((m) => m.module === "showcase")!.env;
    assert.deepEqual(lists(showcase), {
      work: [],
      submits: [{ seat: "mesh-build", kind: "build", subject: workSubject("mesh-build", "build") }],
      emits: [],
      follows: [{ seat: "mesh-build", event: "built", subject: eventSubject("mesh-build", "built"), stream: EVENTS_STREAM, consumer: followConsumer("showcase", "mesh-build", "built") }],
      tools: [{ tool: "hello", subject: toolSubject("showcase", "hello") }],
    });
  });

  it("R57: its lists are the bytes JSON.stringify writes for the entries, members in the entry types' order (the declaration's digest covers them)", () => {
    const beta = composeDeclaration(mesh.state, "beta", EXAMPLE_CONFIG, sha256);
    const gamma = composeDeclaration(mesh.state, "gamma", EXAMPLE_CONFIG, sha256);
    assert.ok(beta.ok && gamma.ok);
    const builder = beta.declaration.modules.find((m) => m.module === "build-machine")!.env;
    const showcase = gamma.declaration.modules.find((m) => m.module === "showcase")!.env;
    const work: WorkEntry[] = [{ seat: "mesh-build", stream: workStream("mesh-build"), consumer: workConsumer("mesh-build"), subjects: [workSubject("mesh-build", "build")] }];
    const emits: EmitEntry[] = [{ seat: "mesh-build", event: "built", subject: eventSubject("mesh-build", "built") }];
    const submits: SubmitEntry[] = [{ seat: "mesh-build", kind: "build", subject: workSubject("mesh-build", "build") }];
    const follows: FollowEntry[] = [
      { seat: "mesh-build", event: "built", subject: eventSubject("mesh-build", "built"), stream: EVENTS_STREAM, consumer: followConsumer("showcase", "mesh-build", "built") },
    ];
    const tools: ToolEntry[] = [{ tool: "hello", subject: toolSubject("showcase", "hello") }];
    assert.deepEqual(
      [builder.MESH_WORK, builder.MESH_EMITS, builder.MESH_SUBMITS, builder.MESH_FOLLOWS, builder.MESH_TOOLS],
      [JSON.stringify(work), JSON.stringify(emits), "[]", "[]", "[]"],
    );
    assert.deepEqual(
      [showcase.MESH_WORK, showcase.MESH_EMITS, showcase.MESH_SUBMITS, showcase.MESH_FOLLOWS, showcase.MESH_TOOLS],
      ["[]", "[]", JSON.stringify(submits), JSON.stringify(follows), JSON.stringify(tools)],
    );
  });

  it("R57 R18: every name a module is told is one its permissions grant and the topology raises", () => {
    const topology = composeTopology(mesh.state, EXAMPLE_CONFIG);
    const consumers = new Set(topology.consumers.map((c) => `${c.stream}/${c.config.durable_name}`));
    const streams = new Set(topology.streams.map((s) => s.name));
    let checked = 0;
    for (const module of moduleNames(mesh.state.modules)) {
      if (!credentialAt(mesh.state.credentials, principalKey("module", module))) continue;
      const user = busUser("module", module);
      const env = moduleEnvironment(mesh.state, module, "tls://bus:4222", user, FINGERPRINT);
      const permissions = permissionsOf(mesh.state, { kind: "module", name: module }, EXAMPLE_CONFIG);
      const pub = (subject: string) => permissions.publish.allow.some((p) => covers(p, subject));
      const sub = (subject: string) => permissions.subscribe.allow.some((p) => covers(p, subject));
      assert.ok(sub(`${env.MESH_INBOX_PREFIX}.reply`), `${module} may subscribe to its inbox prefix`);
      const { work, submits, emits, follows, tools } = lists(env);
      for (const entry of [...work, ...follows]) {
        assert.ok(streams.has(entry.stream), `${module}: stream ${entry.stream} is raised`);
        assert.ok(consumers.has(`${entry.stream}/${entry.consumer}`), `${module}: consumer ${entry.consumer} is raised`);
        assert.ok(pub(`$JS.API.CONSUMER.MSG.NEXT.${entry.stream}.${entry.consumer}`), `${module} may pull ${entry.consumer}`);
        checked += 1;
      }
      for (const entry of [...submits, ...emits]) {
        assert.ok(pub(entry.subject), `${module} may publish ${entry.subject}`);
        checked += 1;
      }
      for (const entry of tools) {
        assert.ok(sub(entry.subject), `${module} may answer on ${entry.subject}`);
        checked += 1;
      }
    }
    assert.ok(checked >= 6, `names were checked (${checked})`);
  });
});
