import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { decideProvisionsMint } from "../../../src/commands/provisionsMint.ts";
import type { Decision, Envelope } from "../../../src/commands/index.ts";
import { MeshEvent } from "../../../src/events/index.ts";
import { requiredProvisions } from "../../../src/compose/provisions.ts";
import { composeDeclarations } from "../../../src/compose/declaration.ts";
import { evolve, provisionKey, type State } from "../../../src/projections/index.ts";
import { sha256 } from "../../../src/push/composition.ts";
import { EXAMPLE_CONFIG, MeshBuilder, exampleMesh, fakeHash, manifests } from "../compose/exampleMesh.ts";

/**
 * R31 decided without a server: the provisions compositions need are minted before composing, so
 * one push leaves the mesh consistent.
 */

const envelope: Envelope = { commandId: "push-1-provisions-0", actor: "controller-mesh-controller", now: "2026-01-01T00:00:00.000Z", secrets: [] };
const app = { name: "app", version: "1", uses: ["git", "npm"] };

/** A mesh whose `app` uses git and npm, and showcase uses git: three provisions missing. */
function missingThree(): State {
  const b = new MeshBuilder(fakeHash).genesis().controller().node("n1").node("n2");
  for (const m of Object.values(manifests)) b.register(m);
  b.register(app);
  b.issue("showcase").issue("git-server").issue("npm-registry").issue("app")
    .assign("showcase", "n1").assign("app", "n1").assign("git-server", "n2").assign("npm-registry", "n2");
  return b.state();
}
const secretsFor = (state: State) => new Map(requiredProvisions(state).map((p) => [provisionKey(p.seat, p.provision, p.consumer), `sealed:${p.consumer}-${p.provision}`]));
function after(state: State, decision: Decision): State {
  assert.ok(decision.ok && !decision.unchanged, decision.ok ? "unchanged" : decision.refusal.code);
  for (const event of decision.events) MeshEvent.parse(event);
  return evolve(state, [{ sequence: state.sequence + 1, commit: { commandId: envelope.commandId, entity: decision.entity, events: decision.events } }]);
}

describe("decideProvisionsMint (R31)", () => {
  it("R31: mints every provision compositions need, each with the shell's secret, and then every node composes", () => {
    const state = missingThree();
    assert.equal(requiredProvisions(state).length, 3);
    assert.ok(composeDeclarations(state, EXAMPLE_CONFIG, sha256).declarations.some((d) => !d.ok && d.refusal.code === "provision-missing"));
    const decision = decideProvisionsMint(state, { pushId: "push-1", sealed: secretsFor(state), limit: 1000 }, envelope);
    assert.ok(decision.ok && !decision.unchanged);
    assert.deepEqual(decision.entity, { kind: "push", id: "push-1" });
    assert.deepEqual(decision.events.map((e) => e.type === "ProvisionMinted" && [e.seat, e.provision, e.consumer, e.user, e.sealed]), [
      ["git", "git", "app", "app", "sealed:app-git"],
      ["git", "git", "showcase", "showcase", "sealed:showcase-git"],
      ["npm", "npm", "app", "app", "sealed:app-npm"],
    ]);
    const next = after(state, decision);
    assert.deepEqual(requiredProvisions(next), []);
    assert.ok(composeDeclarations(next, EXAMPLE_CONFIG, sha256).declarations.every((d) => d.ok), "one push leaves the mesh consistent");
  });

  it("R31: a commit mints at most `limit`; the next decide mints the rest", () => {
    let state = missingThree();
    const sealed = secretsFor(state);
    const counts: number[] = [];
    for (;;) {
      const decision = decideProvisionsMint(state, { pushId: "push-1", sealed, limit: 2 }, envelope);
      if (!decision.ok) {
        assert.equal(decision.refusal.code, "nothing-to-mint");
        break;
      }
      counts.push(decision.events.length);
      state = after(state, decision);
    }
    assert.deepEqual(counts, [2, 1]);
  });

  it("R31: a needed provision without a secret is left for the next commit; none with one is no-secret; none needed is nothing-to-mint", () => {
    const state = missingThree();
    const some = new Map([[provisionKey("npm", "npm", "app"), "sealed:only"]]);
    const partial = decideProvisionsMint(state, { pushId: "push-1", sealed: some, limit: 1000 }, envelope);
    assert.ok(partial.ok && !partial.unchanged);
    assert.deepEqual(partial.events.map((e) => e.type === "ProvisionMinted" && e.consumer + "/" + e.provision), ["app/npm"]);
    const none = decideProvisionsMint(state, { pushId: "push-1", sealed: new Map(), limit: 1000 }, envelope);
    assert.ok(!none.ok);
    assert.equal(none.refusal.code, "no-secret");
    const consistent = decideProvisionsMint(exampleMesh().state, { pushId: "push-1", sealed: new Map(), limit: 1000 }, envelope);
    assert.ok(!consistent.ok);
    assert.equal(consistent.refusal.code, "nothing-to-mint");
  });
});
