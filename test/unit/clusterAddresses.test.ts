/**
 * Issue 14 (R62): on a cluster a credential lists every server (busAddressesOf, pure), and `mesh
 * up --cluster N` runs a process per server and two controllers (processesFor). No server.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { busAddressesOf, evolve, initialState, type State } from "../../src/projections/index.ts";
import { processesFor, PROCESSES } from "../../src/up/processes.ts";
import { TEST_FINGERPRINT } from "../support/commandMesh.ts";

function meshWith(addresses?: string[]): State {
  return evolve(initialState, [{
    sequence: 1,
    commit: {
      commandId: "genesis", entity: { kind: "mesh", id: "genesis" },
      events: [{
        type: "MeshCreated", actor: "installer", commandId: "genesis", at: "2026-12-01T00:00:00.000Z",
        genesisAddress: "tls://127.0.0.1:4301", fingerprint: TEST_FINGERPRINT, bootstrapUser: "controller-mesh-controller",
        ...(addresses ? { addresses } : {}),
      }],
    },
  }]);
}

const SERVERS = ["tls://127.0.0.1:4301", "tls://127.0.0.1:4302", "tls://127.0.0.1:4303"];

describe("a cluster's addresses in credentials (R62)", () => {
  it("R62: a credential pointing at any server of a cluster lists every server, its own address first", () => {
    const state = meshWith(SERVERS);
    assert.deepEqual(busAddressesOf(state, SERVERS[0]!), SERVERS);
    assert.deepEqual(busAddressesOf(state, SERVERS[2]!), [SERVERS[2], SERVERS[0], SERVERS[1]]);
  });

  it("R62: an address outside the cluster (an overlay name, R7) and a one-server mesh list nothing more", () => {
    assert.equal(busAddressesOf(meshWith(SERVERS), "tls://alpha.internal:4301"), undefined);
    assert.equal(busAddressesOf(meshWith(), SERVERS[0]!), undefined);
    assert.equal(busAddressesOf(meshWith([SERVERS[0]!]), SERVERS[0]!), undefined);
    assert.equal(busAddressesOf(initialState, SERVERS[0]!), undefined);
  });

  it("R62: server addresses recorded without a port get the standard one (R8) before they are compared", () => {
    const state = meshWith(["tls://bus-a", "tls://bus-b:4223"]);
    assert.deepEqual(busAddressesOf(state, "tls://bus-b:4223"), ["tls://bus-b:4223", "tls://bus-a:4222"]);
  });
});

describe("the processes of mesh up --cluster", () => {
  it("R61: one server runs the bus, the controller and the host; a cluster every server, an active and a standby controller, the host", () => {
    assert.deepEqual(processesFor(1), [...PROCESSES]);
    assert.deepEqual(processesFor(3), ["bus-1", "bus-2", "bus-3", "controller", "controller-2", "host", "supervisor"]);
  });
});
